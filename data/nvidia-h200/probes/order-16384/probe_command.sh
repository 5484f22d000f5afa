#!/bin/bash
# The order probe at N = 16384 (order_probe.py), at the current source.
SITE=/tmp/site; [ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
P=$OUT/order-16384; mkdir -p $P
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv
sha256sum kernels/*.py > $P/kernel_sha256.txt; cp .whl/order_probe.py .whl/order_probe.sh $P/
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 240 python3 .whl/order_probe.py $P/order.csv 12 40 > $P/order.log 2>&1; echo "rc=$?"; tail -5 $P/order.log
tar czf $OUT/order-16384.tar.gz -C $OUT order-16384 && rm -rf $P
