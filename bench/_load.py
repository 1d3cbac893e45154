"""The machine's load average, printed at a bench's start and end so that a loaded run is visible beside its ratios.

    from _load import load_report
    with load_report('bench_engine'): ...
"""
import contextlib, os, time


def load() -> str:
    "The 1, 5 and 15 minute load averages, and the cores they are shared by."
    return ' '.join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


@contextlib.contextmanager
def load_report(name:str):
    "Print the load average before and after the block, and the block's wall and CPU seconds."
    w0, c0 = time.perf_counter(), time.process_time()
    print(f"{name}: load average at start {load()}", flush=True)
    try: yield
    finally:
        print(f"{name}: load average at end {load()}; {time.perf_counter() - w0:.1f} s wall, "
              f"{time.process_time() - c0:.1f} s CPU in this process", flush=True)
