"""Build a 1,000,000-memory store (384-d, 10 namespaces), reopen it three times, time searches.

Run: python bench/store_1m.py  (about 80 s to build; writes /tmp/st-1m). Figures go to RESULTS.md.
"""
import shutil
import time

import engramdb
import numpy as np
from engramdb.spaces.schema import Schema, Space

path="/tmp/st-1m"; shutil.rmtree(path, ignore_errors=True)
schema = Schema([Space("dense","dense",384,"cosine")])
rng=np.random.default_rng(0)
N=1_000_000; B=20_000
db = engramdb.open(path, schema=schema, embedders={}, dedup="off")
t=time.perf_counter()
for b in range(0,N,B):
    X=rng.standard_normal((B,384)).astype(np.float32); X/=np.linalg.norm(X,axis=1,keepdims=True)
    db.add_many([{"content": f"memory {i}", "namespace": f"ns{i%10}", "vectors": {"dense": X[i-b]}} for i in range(b,b+B)])
print(f"build 1M: {time.perf_counter()-t:.1f}s", flush=True)
db.close()
for _ in range(3):
    t=time.perf_counter(); db=engramdb.open(path, schema=schema, embedders={}, read_only=True); dt=time.perf_counter()-t
    print(f"reopen 1M: {dt:.2f}s segments={db.stats()['segments']}", flush=True)
    q=rng.standard_normal(384).astype(np.float32)
    lat=[]
    for i in range(20):
        t=time.perf_counter(); db.search(q, namespace="ns0", k=10); lat.append(time.perf_counter()-t)
    lat.sort(); print(f"search 1M p50 {lat[10]*1e3:.1f}ms p95 {lat[18]*1e3:.1f}ms", flush=True)
    db.close()
