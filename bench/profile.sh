#!/usr/bin/env bash
# The service's instructions per consumed message and per REST request, counted by callgrind
# (bench/README.md "Where the service's CPU goes"): runs a short bench with every service process
# under `valgrind --tool=callgrind`, then writes the top functions of the first consumer phase
# and the first REST phase to bench/results/profile-consumer.txt and profile-rest.txt, and their
# totals with what the phase did to stdout. Instructions, not seconds: the same binary and inputs
# give the same counts on this noisy machine, whatever else it is doing.
#
# Needs the release build (`cargo build --release --workspace --bins`), valgrind, Postgres and
# RabbitMQ. Usage: bench/profile.sh [TOP (default 40)]; with PROFILE_DIR set, the callgrind
# outputs are kept there (for `callgrind_annotate --tree=caller`, say), else in a temporary
# directory removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

top=${1:-40}
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target="$PWD/$target" ;; esac
service="$target/release/order-service"
bench="$target/release/order-service-bench"
if [ -n "${PROFILE_DIR:-}" ]; then
  out=$PROFILE_DIR
  rm -rf "$out" && mkdir -p "$out"
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/order-service-profile.XXXXXX")
  trap 'rm -rf "$out"' EXIT
fi
case $out in /*) ;; *) out="$PWD/$out" ;; esac

# Every service process the bench starts runs under callgrind; its pid and database name are
# recorded, so each output file can be told apart by the phase that started it.
cat >"$out/service" <<EOF
#!/usr/bin/env bash
echo "\$\$ \${DATABASE_URL##*/}" >>"$out/processes"
exec valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.\$\$" "$service" "\$@"
EOF
chmod +x "$out/service"

"$bench" --service-bin "$out/service" --orders 400 --duration 4 --repetitions 1 \
  --skip-scaling --skip-batch-curve --out "$out/report" >"$out/bench.log" 2>&1 ||
  { cat "$out/bench.log" >&2; exit 1; }

revision=$("$service" --version | awk '{print $NF}' | tr -d '()')
for phase in consumer rest; do
  pid=$(awk -v phase="${phase}0" '$2 ~ "_" phase "$" {print $1; exit}' "$out/processes")
  file="$out/callgrind.$pid"
  [ -f "$file" ] || { echo "no callgrind output for the $phase phase" >&2; exit 1; }
  {
    echo "# Top $top functions of the order-service process of the bench's $phase phase, by instructions"
    echo "# executed in the function itself (callgrind, release build of $revision, $(date -u +%F);"
    echo "# start-up included). Made by bench/profile.sh (bench/README.md \"Where the service's CPU goes\")."
    # awk keeps reading to the end: with `head`, callgrind_annotate would die of SIGPIPE.
    callgrind_annotate --threshold=100 "$file" |
      awk -v top="$top" '/PROGRAM TOTALS/ {print; next} /^ *[0-9,]+ \(/ && /:/ && n++ < top {print}'
  } >"bench/results/profile-$phase.txt"
  echo "$phase: $(grep 'PROGRAM TOTALS' "bench/results/profile-$phase.txt")"
done
grep -E "consumer: |REST: " "$out/bench.log" || true
