"""What the lab measures and on what: the device a worker launches on (device), the machine's
GPUs and software (gpu, env), the timing engines (timing: CUDA events, host timer, the sustained
mode; nvbench_engine: nvbench's cold and batch figures), the ceilings (peaks: measured copy and
theoretical rates; roofline: achieved rate, % of peak and the suspect flag) and lines of code (loc)."""
