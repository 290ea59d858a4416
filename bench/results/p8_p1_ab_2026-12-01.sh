#!/bin/bash
# P1 A/B: PEDL's controller, base (169d6bf) vs new tree, alternating order, case $1, N=$2 pairs
cd /work/main
for i in $(seq 1 $2); do
  if [ $((i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for v in $order; do
    if [ $v = base ]; then root=/tmp/wt_base; else root=/work/main; fi
    out=$(cd $root && PYTHONPATH=$root /work/main/.venv/bin/python bench/p1_throughput.py --mode pedl --case $1 2>/dev/null | tail -1)
    echo "{\"variant\": \"$v\", \"pair\": $i, \"row\": $out}"
  done
done
