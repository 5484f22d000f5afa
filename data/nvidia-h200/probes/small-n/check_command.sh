#!/bin/bash
# small-n: v32 (small_n_tile: v19's kernel and 64x64 tile at N <= 512, its programs dealt in a snake over the SMs)
# verified by verify.py's GPU grid, then v19, v31, v32 and cuDNN timed by check_stages.py at N = 512 and 1024 in
# both dtypes, v19 and v32 also at the 64x64 tile with two stages and at 64x128; then a second pass at N = 512.
SITE=/tmp/site
[ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
P=$OUT/small-n
rm -rf $P; mkdir -p $P
cp .whl/small_n.sh $P/check_command.sh
sha256sum kernels/*.py > $P/kernel_sha256.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
cat $P/nvidia-smi.csv
timeout -s INT 170 python3 -m pipeline.gpu_pin -- python3 workflow/scripts/verify/verify.py --workers 6 \
  --stages v32 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $P/verify.log
for pass in 1 2; do
  N="512 1024"; [ $pass = 2 ] && N=512
  timeout -s INT 170 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v19 v32 v31 \
    --N $N --dtypes float16 bfloat16 --tiles v19:64x64w4s2 v32:64x64w4s2 v19:64x128w4s2 v32:64x128w4s2 \
    --out $P/timing-$pass.csv > $P/timing-$pass.log 2>&1
  echo "timing $pass rc=$? after $(( $(date +%s) - t0 )) s"
done
python3 - <<'P'
import csv, os
for p in (1, 2):
    f = os.environ['OUT'] + f'/small-n/timing-{p}.csv'
    if os.path.exists(f):
        for r in csv.DictReader(open(f)):
            print(p, r['key'][:64], r['status'], r['time_us'], r['n_samples'], r['clocks.sm'], r['power.draw'], r['neighbour_nan_ok'], r['note'][:40])
P
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi-after.csv
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/small-n.tar.gz -C $OUT small-n && rm -rf $P
