"""Archives under charts/*/charts/ in the work tree, if any are kept there, must hold exactly what the
dependency build makes from the sources (an install from the checkout would use them).

Usage: vendored_archives.py SOURCE_CHARTS_DIR BUILT_CHARTS_DIR (run by scripts/chart-checks.sh).
Exit 1 when an archive is stale.
"""
import glob, hashlib, os, sys, tarfile
src, built = sys.argv[1:]
def members(path):
    with tarfile.open(path) as t:
        out = {}
        for m in t.getmembers():
            if not m.isfile():
                continue
            data = t.extractfile(m).read()
            if m.name.endswith(".tgz"):  # nested dependency: compare its contents, not its bytes
                import io
                with tarfile.open(fileobj=io.BytesIO(data)) as n:
                    data = repr(sorted((x.name, hashlib.sha256(n.extractfile(x).read()).hexdigest())
                                       for x in n.getmembers() if x.isfile())).encode()
            out[m.name] = hashlib.sha256(data).hexdigest()
        return out
stale, n = [], 0
for archive in sorted(glob.glob(f"{src}/*/charts/*.tgz")):
    rel = os.path.relpath(archive, src)
    fresh = os.path.join(built, rel)
    n += 1
    if not os.path.exists(fresh) or members(archive) != members(fresh):
        stale.append(rel)
for s in stale:
    print(f"    charts/{s} is stale: run helm dependency build on its chart, or stop tracking it")
print(f"    {n} vendored archive(s) in the work tree, {n - len(stale)} current")
sys.exit(1 if stale else 0)
