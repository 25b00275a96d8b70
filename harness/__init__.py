"""The lab's harness, in the order a `ways run` flows through it (imports no GPU library):

- run/      plan the work from the folders (registry), run each implementation in worker processes
            (runner, supervise, worker), check every output on the worker's device
- measure/  what a worker and a run measure: timing engines, nvbench, peaks, % of peak (roofline),
            lines of code, the machine (gpu, env) and the device a worker holds
- results/  records as they come (results.jsonl), the summary document and its schema, summary.csv,
            several runs merged, two runs compared, outputs cross-checked
- report/   what people read: the terminal tables, report.md, figures, the HTML page
- cli.py    `ways` on top of them

A package imports only those listed after it here, and itself: report -> results, measure;
run -> measure, results; measure -> results; results -> nothing of the harness.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent     # the checkout (workers run here; sources are read from it)
