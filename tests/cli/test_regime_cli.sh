#!/usr/bin/env bash
# `duet regime` from the outside: bad input exits 2 naming the problem, and a tiny sweep (one
# model, two links, two steps) writes regime.csv and regime.json with their metadata, a row per
# (link, strategy, devices, measured or predicted), and the two plots (where gnuplot is installed).
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$1" regime

expect_bad "--strategies: the map compares with single-device training and predicts from it: add single" \
  --strategies dp,ddp
expect_bad "--links: infiniband not in" --links none,infiniband
expect_bad "--models: vgg not in" --models vgg
expect_bad "--cores-per-device 100000: 2 devices need 200000 cores" --cores-per-device 100000
touch "$work/file"
expect_bad "--out $work/file/results: cannot create the folder" --out "$work/file/results"
without_gnuplot expect_bad "the plots: gnuplot is not on the PATH" --out "$work/results"

plots=(--no-plots)
command -v gnuplot > /dev/null && plots=()
# A link or strategy named twice runs once, and single runs first whatever the order.
if ! "$duet" regime --models mlp --links none,pcie,none --strategies ddp-d2l,dp,single,ddp,dp --steps 2 --warmup 1 \
     --batch-size 64 "${plots[@]}" \
     --out "$work/map" > "$work/run" 2> "$work/progress"; then
  fail "tiny sweep: $(cat "$work/run" "$work/progress")"
fi
# Progress on stderr, a line per run as it starts: [k/n] model link strategy.
grep -qE "^\[1/8\] mlp none single on 1 device\(s\) \.\.\.$" "$work/progress" || fail "no progress: $(cat "$work/progress")"
grep -qE "^\[8/8\] mlp pcie ddp on 2 device\(s\): [0-9.]+ ms per step" "$work/progress" \
  || fail "no last run in: $(cat "$work/progress")"
grep -qE "^pcie +(single|dp|ddp|ddp-d2l)( \+[0-9.]+%)? *$" "$work/run" || fail "no map printed: $(cat "$work/run")"
python3 - "$work/map" <<'PY' || fail "regime.csv or regime.json is malformed (above)"
import csv, json, sys
folder = sys.argv[1]
lines = open(folder + "/regime.csv").read().splitlines()
meta = dict(line[2:].split(": ", 1) for line in lines if line.startswith("# "))
for key in ("duet_commit", "date_utc", "cpu_model", "hardware_threads", "process_cores", "steps", "models", "links"):
    assert meta.get(key), f"regime.csv: no {key} in its metadata: {meta}"
assert meta["links"] == "none;pcie", meta["links"]
rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
# Per link: 4 measured (single on 1, three strategies on 2) and 10 predicted (single on 1, three on 2, 4, 8).
assert len(rows) == 28, len(rows)
keys = {(r["link"], r["strategy"], r["devices"], r["kind"]) for r in rows}
assert len(keys) == 28, "a (link, strategy, devices, kind) twice"
for link in ("none", "pcie"):
    for strategy in ("dp", "ddp", "ddp-d2l"):
        assert (link, strategy, "2", "measured") in keys, (link, strategy)
        for n in ("2", "4", "8"):
            assert (link, strategy, n, "predicted") in keys, (link, strategy, n)
for r in rows:
    assert r["model"] == "mlp" and float(r["ms_per_step"]) > 0 and float(r["images_per_second"]) > 0, r
    assert float(r["speedup"]) > 0, r
    if r["kind"] == "measured":
        assert float(r["predicted_ms"]) > 0 and float(r["compute_slowdown"]) > 0, r
        assert float(r["max_check_ulps"]) <= 8, f"the per-step check failed: {r}"
    if r["strategy"] == "single":
        assert abs(float(r["speedup"]) - 1) < 1e-9, r

doc = json.load(open(folder + "/regime.json"))
m = doc["metadata"]
assert m["duet_commit"] and m["date_utc"].endswith("Z") and m["cpu_model"] and m["hardware_threads"] >= 1, m
assert m["measured_devices"] == 2 and m["predicted_devices"] == [2, 4, 8], m
assert len(doc["points"]) == 28
assert {p["kind"] for p in doc["points"]} == {"measured", "predicted"}
winners = doc["winners"]["measured"]
assert [(w["model"], w["link"]) for w in winners] == [("mlp", "none"), ("mlp", "pcie")], winners
for w in winners:
    assert w["winner"] in ("single", "dp", "ddp", "ddp-d2l") and w["margin"] >= 0, w
    assert w["label"].startswith(w["winner"] + " +"), w
assert set(doc["winners"]["predicted"]) == {"2", "4", "8"}
assert set(doc["calibration"]) == {"none", "pcie"} and doc["calibration"]["pcie"][0]["alpha_us"] >= 0
PY
if [ ${#plots[@]} -eq 0 ]; then
  for png in regime-map.png speedup.png; do
    [ "$(head -c 4 "$work/map/$png" | tail -c 3)" = "PNG" ] || fail "$png was not written as a PNG"
  done
else
  echo "gnuplot is not installed: the plots are not checked"
fi

echo "$failures failure(s)"
[ $failures -eq 0 ]
