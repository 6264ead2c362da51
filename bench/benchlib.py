"""What the benchmarks share: the stack, a recorder of a sink's monitor, timing and /proc readings."""
import os, shutil, statistics, subprocess, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALL = ["busctl", "--user", "call", "org.voicebox.Speech1", "/org/voicebox/Speech1", "org.voicebox.Speech1"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def ensure_stack():
    """Returns a tear-down function; brings up scripts/stack unless a stack is already in the environment."""
    if os.environ.get("SPEECHD_ADDRESS") and os.environ.get("VOICEBOX_TEST_SINK"):
        return lambda: None
    stack = tempfile.mkdtemp(prefix="voicebox-bench.")
    subprocess.run(["scripts/stack", "up", stack], check=True, stdout=subprocess.DEVNULL)
    for line in open(os.path.join(stack, "env")):
        key, _, value = line.removeprefix("export ").strip().partition("=")
        os.environ[key] = value.strip("'")
    return lambda: (subprocess.run(["scripts/stack", "down", stack]), shutil.rmtree(stack, ignore_errors=True))


def timed(cmd, n):
    """Median wall time of n runs of cmd, in milliseconds."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


class Ears:
    """parec on the sink's monitor; remembers when each chunk arrived."""
    RATE = 16000

    def __init__(self, device):
        self.proc = subprocess.Popen(["parec", "-d", device, "--raw", "--format=s16le", "--rate=16000", "--channels=1",
                                      "--latency-msec=10"], stdout=subprocess.PIPE, bufsize=0)
        self.chunks = []  # (arrival time, bytes)
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        while not self.chunks:
            time.sleep(0.01)

    def _read(self):
        while True:
            data = self.proc.stdout.read(320)
            if not data:
                return
            with self.lock:
                self.chunks.append((time.perf_counter(), data))

    def first_loud_after(self, t0, threshold=300, timeout=10):
        """Arrival time of the first chunk after t0 with a sample louder than threshold."""
        return self._first_after(t0, lambda samples: any(abs(s) > threshold for s in samples), timeout)

    def first_quiet_after(self, t0, threshold=300, timeout=10):
        """Arrival time of the first chunk after t0 with no sample louder than threshold."""
        return self._first_after(t0, lambda samples: all(abs(s) <= threshold for s in samples), timeout)

    def _first_after(self, t0, wanted, timeout):
        deadline = time.perf_counter() + timeout
        seen = 0
        while True:
            with self.lock:
                fresh = self.chunks[seen:]
                seen = len(self.chunks)
            for arrived, data in fresh:
                if arrived < t0:
                    continue
                samples = memoryview(data).cast("h") if len(data) % 2 == 0 else memoryview(data[:-1]).cast("h")
                if wanted(samples):
                    return arrived
            if time.perf_counter() >= deadline:
                return None
            time.sleep(0.002)

    def rms(self, t0, t1):
        """Root mean square of the samples that arrived between t0 and t1 (0 ... 32768)."""
        with self.lock:
            data = b"".join(d for t, d in self.chunks if t0 <= t < t1)
        samples = memoryview(data[: len(data) // 2 * 2]).cast("h")
        return (sum(s * s for s in samples) / max(1, len(samples))) ** 0.5

    def close(self):
        self.proc.terminate()


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid):
    """The processes pid started (every thread's), from /proc; [] once it is gone."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in open(f"/proc/{pid}/task/{task}/children").read().split()]
        except OSError:
            pass
    return found


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def wait_quiet(ears, seconds=0.5):
    """Waits until the sink has been silent for a while, so measurements don't overlap."""
    while True:
        t = time.perf_counter()
        time.sleep(seconds)
        if ears.first_loud_after(t, timeout=0) is None:
            return


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def family(pid):
    """pid and every process under it, whichever of their threads started them."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children(current)
    return found


def release_daemon():
    """Builds voiceboxd in release mode and returns its path."""
    subprocess.run(["swift", "build", "-c", "release", "--product", "voiceboxd"], check=True, stdout=subprocess.DEVNULL)
    # voiceboxd starts it beside itself for callers' files.
    subprocess.run(["swift", "build", "-c", "release", "--product", "voicebox-worker"], check=True, stdout=subprocess.DEVNULL)
    # ...and this one for the sound server (the mixer, the microphone).
    subprocess.run(["swift", "build", "-c", "release", "--product", "voicebox-audio"], check=True, stdout=subprocess.DEVNULL)
    return run(["swift", "build", "-c", "release", "--show-bin-path"]).stdout.strip() + "/voiceboxd"


def wait_for_name(seconds=20):
    deadline = time.perf_counter() + seconds
    while subprocess.run(["busctl", "--user", "status", "org.voicebox.Speech1"], capture_output=True).returncode != 0:
        if time.perf_counter() > deadline:
            raise SystemExit("bench: voiceboxd did not take its name")
        time.sleep(0.005)
