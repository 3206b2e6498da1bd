"""The options the measuring commands share, each declared once.

Typer reads a command's options from its signature. `model_options` and `sweep_options` add the
shared ones to a command's signature and hand the command one object instead (a ModelChoice, a
SweepOptions), so bench, bench-dist, profile, memory and precision declare no option twice and
pass none by position.

A sweep's grid resolves to validated StepConfigs here too: one set of defaults (tiny at context
128 in fp32 on a CPU; small at 512 in fp32 and bf16 on a GPU) for every command that sweeps.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional, Sequence

import typer

from lmperf.attention_names import ATTENTION_IMPLEMENTATIONS, check_runs_here
from lmperf.cli_support import given_options, split_list
from lmperf.errors import UsageError
from lmperf.model.choice import ModelChoice

if TYPE_CHECKING:  # torch comes with these; the commands import this module before parsing
    from lmperf.model.step import StepConfig
    from lmperf.run.sweep import SweepSettings


@dataclass(frozen=True)
class Flag:
    """One command-line option: the parameter typer sees, its declaration and its default."""

    name: str
    annotation: Any
    default: Any = None

    @property
    def spelling(self) -> str:
        """How a user types it: its first long spelling (`--tie-embeddings`, not the /--untie)."""
        info = self.annotation.__metadata__[0]
        # Inside Annotated, typer reads Option's first positional argument as a spelling too
        spellings = ([info.default] if isinstance(info.default, str) else []) + list(info.param_decls)
        declared = [d for d in spellings if d.startswith("--")]
        return declared[0].split("/")[0] if declared else "--" + self.name.replace("_", "-")


def _option(*spellings: str, help: str) -> Any:
    return typer.Option(*spellings, help=help)


# The model's own shape: a Hugging Face config instead of presets, and fields laid over either.
# Each flag's name on the left, the ModelConfig field it sets on the right.
MODEL_FLAGS = (
    Flag(
        "module",
        Annotated[
            Optional[str],
            _option(
                help="Your own nn.Module instead of lmperf's model: PKG.MOD:FACTORY or path/to/file.py:FACTORY, a function returning a module that maps token ids (batch, context) to logits (batch, context, vocab)."
            ),
        ],
    ),
    Flag(
        "module_args",
        Annotated[
            Optional[str],
            _option(help="The --module factory's keyword arguments, a JSON object (e.g. '{\"d_model\": 512}')."),
        ],
    ),
    Flag(
        "hf_config",
        Annotated[
            Optional[str],
            _option(
                help="A Hugging Face config.json (or its folder, or a model name already in the local HF cache) instead of presets."
            ),
        ],
    ),
    Flag("d_model", Annotated[Optional[int], _option(help="Model width, over the preset or config.")]),
    Flag("d_ff", Annotated[Optional[int], _option(help="MLP width.")]),
    Flag("layers", Annotated[Optional[int], _option(help="Transformer blocks.")]),
    Flag("heads", Annotated[Optional[int], _option(help="Query heads.")]),
    Flag(
        "kv_heads",
        Annotated[Optional[int], _option(help="K/V heads (fewer than --heads: grouped-query; 1: multi-query).")],
    ),
    Flag(
        "head_dim",
        Annotated[
            Optional[int],
            _option(
                help="Width of one attention head (default d_model / heads; a config's head_dim that differs from hidden_size / heads stays under --d-model and --heads)."
            ),
        ],
    ),
    Flag("vocab", Annotated[Optional[int], _option(help="Vocabulary size.")]),
    Flag(
        "max_seq_len",
        Annotated[
            Optional[int], _option("--max-context", "--max-seq-len", help="Longest context (rotary table length).")
        ],
    ),
    Flag(
        "tie_embeddings",
        Annotated[
            Optional[bool],
            _option("--tie-embeddings/--untie-embeddings", help="LM head shares the embedding matrix (or not)."),
        ],
    ),
    Flag("mlp", Annotated[Optional[str], _option(help="swiglu or gelu (a two-matrix GELU MLP).")]),
    Flag(
        "qk_norm",
        Annotated[
            Optional[bool],
            _option(
                "--qk-norm/--no-qk-norm",
                help="An RMSNorm over each head of q and k before rotary (Qwen3's), or none; a qwen3 config has them.",
            ),
        ],
    ),
)
MODEL_FIELD_OF_FLAG = {"layers": "n_layers", "heads": "n_heads", "kv_heads": "n_kv_heads", "vocab": "vocab_size"}


NAMED_MODEL_FLAGS = ("hf_config", "module", "module_args")  # the model by name, not by shape


def _model_choice(values: dict) -> ModelChoice:
    shape = {
        MODEL_FIELD_OF_FLAG.get(name, name): value for name, value in values.items() if name not in NAMED_MODEL_FLAGS
    }
    return ModelChoice.from_options(values["hf_config"], values["module"], values["module_args"], **shape)


@dataclass(frozen=True)
class SweepOptions:
    """A sweep's options as given on the command line (None: the device's default)."""

    presets: Optional[str] = None
    contexts: Optional[str] = None
    modes: str = "forward,forward-backward,train-step"
    precisions: Optional[str] = None
    compile: str = "eager"
    attention: str = "naive"
    batch: int = 4
    warmup: int = 5
    steps: int = 10
    device: str = "auto"
    peak_tflops: Optional[float] = None
    resume: Optional[Path] = None
    runs_root: Path = Path("runs")
    model: ModelChoice = field(default_factory=ModelChoice)  # --hf-config and explicit shapes
    param_dtypes: str = "fp32"
    losses: str = "eager"
    checkpoints: str = "none"
    optimizers: str = "torch"
    leaderboard_warmup_ms: float = 0.0
    leaderboard_rep_ms: float = 0.0

    def resolved(self, on_gpu: bool) -> "SweepOptions":
        """The device's defaults written in, so a run directory records what ran and a resume
        that restates a default matches it."""
        preset, context = ("small", "512") if on_gpu else ("tiny", "128")
        return replace(
            self,
            presets=self.presets if self.presets is not None or self.model.names_own_model else preset,
            contexts=context if self.contexts is None else self.contexts,
            precisions=("fp32,bf16" if on_gpu else "fp32") if self.precisions is None else self.precisions,
        )

    def configs(self, on_gpu: bool) -> list[StepConfig]:
        """Every configuration of the grid, validated, modes varying fastest."""
        options = self.resolved(on_gpu)
        # An option given empty (-p '') is refused by split_list, not read as "not given".
        presets = split_list(options.presets, "presets") if options.presets is not None else None
        attentions = [check_runs_here(impl, on_gpu) for impl in split_list(self.attention, "attention")]
        return grid_configs(
            self.model,
            presets,
            split_list(options.contexts, "contexts", int),
            split_list(self.modes, "modes"),
            split_list(options.precisions, "precisions"),
            split_list(self.compile, "compile"),
            attentions,
            self.batch,
            split_list(self.param_dtypes, "param-dtype"),
            split_list(self.losses, "loss"),
            split_list(self.checkpoints, "checkpoint"),
            split_list(self.optimizers, "optimizer"),
        )

    def validate(self) -> "SweepOptions":
        """Bad input fails here, before a run directory is made (needs a resolved --device)."""
        self.settings(self.device)
        self.configs(self.device.startswith("cuda"))
        return self

    def arguments(self) -> dict:
        """What a run directory records (JSON): every option but where the directories are."""
        arguments = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("resume", "runs_root")}
        model = self.model
        module = model.user_model.factory if model.user_model else model.module
        arguments["model"] = {
            "hf_config": _absolute(model.hf_config),
            "overrides": dict(model.overrides),
            "module": module,
            "module_args": model.module_args,
        }
        return arguments

    def with_arguments(self, arguments: dict) -> "SweepOptions":
        """These options with the recorded `arguments` of a resumed run directory."""
        changes = {name: arguments[name] for name in self.arguments() if name in arguments}
        if "model" in changes:
            recorded = changes["model"]
            if (
                self.model.user_model
                and isinstance(recorded, dict)
                and recorded.get("module") == self.model.user_model.factory
            ):
                changes["model"] = self.model  # the same module from Python: nothing to rebuild it from
            else:
                changes["model"] = _recorded_model(recorded)
        return replace(self, **changes)

    def settings(self, device: str) -> SweepSettings:
        """How each configuration is timed on `device` (the resolved --device)."""
        if self.warmup < 0 or self.steps <= 0:
            raise UsageError(f"need --warmup >= 0 and --steps > 0, got {self.warmup} and {self.steps}")
        if self.leaderboard_warmup_ms < 0 or self.leaderboard_rep_ms < 0:
            raise UsageError("--leaderboard-warmup-ms and --leaderboard-rep-ms cannot be negative")
        from lmperf.run.sweep import SweepSettings

        return SweepSettings(
            self.warmup, self.steps, device, self.peak_tflops, self.leaderboard_warmup_ms, self.leaderboard_rep_ms
        )


def _recorded_model(recorded: Any) -> ModelChoice:
    """The model a manifest records ({hf_config, overrides, module, module_args}, any left out
    when unset); anything else is a UsageError, not a KeyError."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("overrides") or {}, dict):
        raise UsageError(f"the manifest records the model as {recorded!r}, not as its hf_config and overrides")
    return ModelChoice(
        recorded.get("hf_config"),
        tuple((recorded.get("overrides") or {}).items()),
        recorded.get("module"),
        recorded.get("module_args"),
    ).validate()


def _absolute(hf_config: str | None) -> str | None:
    """A config on disk as an absolute path, so a resume from another directory finds it; a name
    in the Hugging Face cache as it is."""
    return str(Path(hf_config).resolve()) if hf_config and Path(hf_config).exists() else hf_config


def grid_configs(
    model: ModelChoice,
    presets: list[str] | None,
    contexts: list[int],
    modes: list[str],
    precisions: list[str],
    compiles: list[str],
    attentions: list[str],
    batch: int,
    param_dtypes: list[str],
    losses: list[str],
    checkpoints: list[str],
    optimizers: Sequence[str] = ("torch",),
) -> list[StepConfig]:
    """The grid of the model's bases (presets, or the Hugging Face config) and every other axis."""
    from lmperf.run.sweep import grid

    return grid(
        model.bases(presets),
        contexts,
        modes,
        precisions,
        compiles,
        attentions,
        batch,
        param_dtypes,
        losses,
        checkpoints,
        optimizers,
    )


_SWEEP = SweepOptions()
SWEEP_FLAGS = (
    Flag(
        "presets",
        Annotated[
            Optional[str],
            _option("--presets", "-p", help="Comma-separated presets (default: tiny on a CPU, small on a GPU)."),
        ],
    ),
    Flag(
        "contexts",
        Annotated[
            Optional[str],
            _option("--contexts", "-t", help="Comma-separated context lengths (default: 128 on a CPU, 512 on a GPU)."),
        ],
    ),
    Flag("modes", Annotated[str, _option(help="forward, forward-backward, train-step.")], _SWEEP.modes),
    Flag(
        "precisions",
        Annotated[
            Optional[str],
            _option("--precisions", help="fp32, bf16 (bf16 autocast). Default: fp32 on a CPU, fp32,bf16 on a GPU."),
        ],
    ),
    Flag(
        "compile", Annotated[str, _option("--compile", help="eager, compile (torch.compile), or both.")], _SWEEP.compile
    ),
    Flag(
        "attention",
        Annotated[str, _option(help=", ".join(ATTENTION_IMPLEMENTATIONS) + " (comma-separated for several).")],
        _SWEEP.attention,
    ),
    Flag("batch", Annotated[int, _option(help="Batch size.")], _SWEEP.batch),
    Flag("warmup", Annotated[int, _option(help="Warm-up steps before measuring (0 allowed).")], _SWEEP.warmup),
    Flag("steps", Annotated[int, _option(help="Measured steps.")], _SWEEP.steps),
    Flag("device", Annotated[str, _option(help="auto, cpu or cuda.")], _SWEEP.device),
    Flag(
        "peak_tflops", Annotated[Optional[float], _option(help="Override the GPU's dense peak TFLOP/s used for MFU.")]
    ),
    Flag(
        "resume",
        Annotated[Optional[Path], _option(help="Continue the sweep in this run directory, skipping finished rows.")],
    ),
    Flag("runs_root", Annotated[Path, _option("--runs", help="Where run directories are created.")], _SWEEP.runs_root),
    Flag(
        "param_dtypes",
        Annotated[
            str,
            _option(
                "--param-dtype",
                help="fp32 (fp32 master weights, gradients, AdamW state; bf16 via autocast) or bf16 (pure bf16 parameters and optimizer state; needs --precisions bf16); comma-separated.",
            ),
        ],
        _SWEEP.param_dtypes,
    ),
    Flag(
        "losses",
        Annotated[
            str,
            _option(
                "--loss",
                help="eager (logits, then F.cross_entropy) or fused (lmperf.ops fused linear cross-entropy, no logits); comma-separated.",
            ),
        ],
        _SWEEP.losses,
    ),
    Flag(
        "checkpoints",
        Annotated[
            str,
            _option(
                "--checkpoint",
                help="Activation checkpointing per block: none, full, selective (keeps the attention outputs), selective-mm (also the QKV, gate and up outputs), selective-mm-out (and the output projection's), any selective one with :K (its last K blocks keep everything, e.g. selective:8), or blocks counted out from the first (e.g. selective-mm-out*12+selective-mm*22); comma-separated.",
            ),
        ],
        _SWEEP.checkpoints,
    ),
    Flag(
        "optimizers",
        Annotated[
            str,
            _option(
                "--optimizer",
                help="torch (torch.optim.AdamW, fused on CUDA) or lmperf (lmperf.ops.AdamW: one Triton pass per tensor); the same AdamW hyperparameters; comma-separated.",
            ),
        ],
        _SWEEP.optimizers,
    ),
    Flag(
        "leaderboard_warmup_ms",
        Annotated[
            float, _option(help="do_bench warm-up budget in ms for the leaderboard_ms figure (the leaderboard: 10000).")
        ],
        _SWEEP.leaderboard_warmup_ms,
    ),
    Flag(
        "leaderboard_rep_ms",
        Annotated[
            float,
            _option(help="do_bench repetition budget in ms for leaderboard_ms (the leaderboard: 30000); 0 skips it."),
        ],
        _SWEEP.leaderboard_rep_ms,
    ),
)


def flag_of(argument: str) -> str:
    """The command-line spelling of a recorded argument: `param_dtypes` -> `--param-dtype`,
    `model.overrides.n_layers` -> `--layers`, `model.hf_config` -> `--hf-config`."""
    name = argument.rsplit(".", 1)[-1]
    if argument.startswith("model."):
        by_field = {MODEL_FIELD_OF_FLAG.get(f.name, f.name): f for f in MODEL_FLAGS}
        if name in by_field:
            return by_field[name].spelling
    for flag in SWEEP_FLAGS + MODEL_FLAGS:
        if flag.name == name:
            return flag.spelling
    return "--" + name.replace("_", "-")


def _with_flags(command: Callable, target: str, flags: tuple[Flag, ...], build: Callable[[dict], Any]) -> Callable:
    """`command` (which takes `target`) with `flags` in its signature instead; the wrapper builds
    `target` from them."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != target]
    added = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.annotation)
        for f in flags
    ]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        values = {f.name: kwargs.pop(f.name, f.default) for f in flags}
        return command(*args, **kwargs, **{target: build(values)})

    parameters = own + added
    wrapper.__signature__ = signature.replace(parameters=parameters)
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters if p.annotation is not inspect.Parameter.empty}
    return wrapper


def model_options(command: Callable) -> Callable:
    """Give `command(..., model: ModelChoice)` the model flags (--hf-config .. --mlp) instead."""
    return _with_flags(command, "model", MODEL_FLAGS, _model_choice)


def sweep_options(command: Callable) -> Callable:
    """Give `command(..., options: SweepOptions)` bench's sweep flags and the model flags instead."""
    sweep_names = {f.name for f in SWEEP_FLAGS}

    def build(values: dict) -> SweepOptions:
        model = _model_choice({name: value for name, value in values.items() if name not in sweep_names})
        return SweepOptions(**{name: value for name, value in values.items() if name in sweep_names}, model=model)

    return _with_flags(command, "options", SWEEP_FLAGS + MODEL_FLAGS, build)


def given_fields(context: typer.Context) -> set[str]:
    """The SweepOptions fields typed on this command line (any model flag gives `model`)."""
    model = {f.name for f in MODEL_FLAGS}
    return {"model" if name in model else name for name in given_options(context)}
