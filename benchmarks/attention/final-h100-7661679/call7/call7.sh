cd .stage/b; export PYTHONPATH=$PWD/src LMPERF_COMMIT="$(cat ../sha)" TRITON_CACHE_DIR=/tmp/triton-cache
STAGES=info bash benchmarks/attention/gpu_run.sh > /dev/null 2>&1
for grid in d64-d128 d128-short short; do
  echo "=== variants $grid $(date -u +%H:%M:%S)"
  VARIANTS_GRID=$grid VARIANTS_BASELINES=sdpa-cudnn VARIANTS_S=110 timeout 140 python3 benchmarks/attention/variants.py \
    $OUT/variants-$grid.jsonl default > $OUT/variants-$grid.log 2>&1; tail -n 4 $OUT/variants-$grid.log
done
GPU_RUN_CHILD=1 STAGES=tests-rest TESTS_REST_S=280 bash benchmarks/attention/gpu_run.sh > $OUT/tests-rest.out 2>&1 &
GPU_RUN_CHILD=1 STAGES=tests-par TESTS_A_S=300 TESTS_B_S=300 TESTS_C_S=300 bash benchmarks/attention/gpu_run.sh > /dev/null 2>&1
wait
grep -hE "passed|failed|error" $OUT/tests-*.log
cd $OUT && tar -czf logs.tgz --remove-files $(ls *.log *.out | grep -v '^info.log$') && ls
