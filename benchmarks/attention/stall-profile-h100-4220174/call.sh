export PYTHONPATH=$PWD/src LMPERF_COMMIT="$(cat .stage/sha)" TRITON_CACHE_DIR=/tmp/triton-cache
cp .stage/call.sh $OUT/call.sh
STAGES=info bash benchmarks/attention/gpu_run.sh >/dev/null 2>&1; date -u >> $OUT/info.log
STALL_CASES=8,9,14,15 PROFILE_S=400 bash benchmarks/attention/stall_profile.sh > /dev/null 2>&1
tail -n 25 $OUT/stall_profile.log; ls -la $OUT
date -u >> $OUT/info.log
