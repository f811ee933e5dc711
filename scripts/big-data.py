#!/usr/bin/env python3
"""Writes N points as CSV and NDJSON for the big-file measurements in docs/performance.md: the
GeoNames cities of data/, each repeated with a small seeded jitter, columns id, lat, lon, name, cc.

    scripts/big-data.py 10000000 /tmp/points10m   # -> /tmp/points10m.csv, /tmp/points10m.ndjson
"""

import csv
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main():
    count, stem = int(sys.argv[1]), sys.argv[2]
    with open(ROOT / "data" / "geonames_rg_cities1000_145k.csv", newline="", encoding="utf-8") as f:
        cities = [(float(r["lat"]), float(r["lon"]), r["name"], r["cc"]) for r in csv.DictReader(f)]
    rng = random.Random(1)
    with open(stem + ".csv", "w", encoding="utf-8") as c, open(stem + ".ndjson", "w", encoding="utf-8") as n:
        c.write("id,lat,lon,name,cc\n")
        for i in range(count):
            lat, lon, name, cc = cities[i % len(cities)]
            lat = round(max(-90.0, min(90.0, lat + rng.uniform(-0.05, 0.05))), 5)
            lon = round(max(-180.0, min(180.0, lon + rng.uniform(-0.05, 0.05))), 5)
            quoted = '"' + name.replace('"', '""') + '"' if any(ch in name for ch in ',"\n') else name
            c.write(f"{i},{lat},{lon},{quoted},{cc}\n")
            n.write(json.dumps({"type": "Feature", "id": i, "geometry": {"type": "Point", "coordinates": [lon, lat]},
                                "properties": {"name": name, "cc": cc}}, ensure_ascii=False, separators=(",", ":")))
            n.write("\n")


if __name__ == "__main__":
    main()
