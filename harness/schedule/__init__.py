"""Sharing one GPU among a run's processes (`ways run --jobs`): the readers-writer GPU lock that keeps
timing alone on the GPU and its record of every hold (gpu_lock, lock_holds), which job a free
worker slot takes next (slots), and how busy the cores were meanwhile (cpu_load)."""
