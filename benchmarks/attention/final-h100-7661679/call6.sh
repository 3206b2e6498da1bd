cd .stage/b; export PYTHONPATH=$PWD/src LMPERF_COMMIT="$(cat ../sha)" TRITON_CACHE_DIR=/tmp/triton-cache
STAGES="info model target sweep" MODEL_ROUNDS=2 MODEL_S=130 TARGET_S=90 \
  SWEEP_IMPLS=triton,sdpa-cudnn,sdpa-flash SWEEP_CONTEXTS=1024,4096,16384 SWEEP_HEAD_DIMS=64,80,128 SWEEP_S=170 \
  bash benchmarks/attention/gpu_run.sh
cd $OUT && tar -czf bench.tgz bench-*.jsonl --remove-files && ls
