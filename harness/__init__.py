"""The lab's harness, in the order a `ways run` flows through it (imports no GPU library):

- run/       plan the work from the folders (registry), run each implementation in worker processes
             (runner, supervise, worker), check every output on the worker's device, rerun what changed
- schedule/  how workers share one GPU and the machine's cores: the GPU lock, worker slots, CPU load
- measure/   what a worker and a run measure: timing engines, nvbench, peaks, % of peak (roofline),
             lines of code, the machine (gpu, env) and the device a worker holds
- results/   records as they come (results.jsonl), the summary document and its schema, summary.csv,
             several runs merged, two runs compared, outputs cross-checked
- report/    what people read: the terminal tables, report.md, figures, the HTML page
- cli.py     `ways` on top of them

A package imports only those listed here after its arrow, and itself (tests/test_layout.py):
report -> schedule, measure, results; run -> schedule, measure, results; schedule -> measure, results;
measure -> results; results -> nothing of the harness.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent     # the checkout (workers run here; sources are read from it)
