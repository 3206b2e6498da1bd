# Stages of a one-call device script: each stage gets its own time limit inside one global
# deadline, logs to $OUT/NAME.log and prints its exit status, wall time, first errors and tail.
# Source it after setting OUT and DEADLINE (a value of bash's $SECONDS).
left() { echo $((DEADLINE - SECONDS)); }
stage() {  # stage NAME LIMIT_S COMMAND...: run if the deadline allows
  local name=$1 limit=$2; shift 2
  [ "$(left)" -lt 60 ] && { echo "== $name skipped: $(left) s left"; return 1; }
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  echo "== $name (limit ${limit} s) $(date -u +%H:%M:%S)"; local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "== $name rc=$rc wall $((SECONDS - t0)) s"; grep -m3 -E "OutOfMemoryError|Error:" "$OUT/$name.log"
  tail -n 25 "$OUT/$name.log"; return $rc
}
