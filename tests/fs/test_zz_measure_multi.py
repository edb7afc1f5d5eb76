# temporary: not committed. Times ls/read of engine one with two up, then with two stopped.
import os, time, statistics
from conftest import call_with_timeout, sha256_file
from test_multi import write_context, daemon_env


def test_measure(engine, private_engine, container, mount, tmp_path):
    e2 = private_engine()
    cfg = str(tmp_path / "cfg")
    write_context(cfg, "one", engine.url)
    write_context(cfg, "two", e2.url)
    c1 = container()
    c1.sh("dd if=/dev/urandom of=/data bs=1M count=4 2>/dev/null")
    c2 = container(engine=e2)
    m = mount("-o", "engines=one,two", host=False, env=daemon_env(tmp_path, cfg))
    d = os.path.join(m.path, "one", c1.name)

    def run(label):
        ls, rd = [], []
        for i in range(30):
            time.sleep(1.1)  # past attr_timeout: revalidation each time
            t = time.monotonic(); os.listdir(os.path.join(d, "etc")); [os.lstat(os.path.join(d, "etc", n)) for n in os.listdir(os.path.join(d, "etc"))]; ls.append(time.monotonic() - t)
            t = time.monotonic(); sha256_file(os.path.join(d, "data")); rd.append(time.monotonic() - t)
        out = f"{label}: ls -la etc median {statistics.median(ls)*1000:.1f} ms max {max(ls)*1000:.1f}; read 4 MiB median {statistics.median(rd)*1000:.1f} ms max {max(rd)*1000:.1f}"
        print(out)
        with open("/tmp/multi-measure/out.txt", "a") as f:
            f.write(out + "\n")

    run("both up")
    e2.stop()
    for _ in range(3):
        try:
            os.listdir(os.path.join(m.path, "two", c2.name))
        except OSError:
            pass
    run("two stopped")
