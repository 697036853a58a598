"""What listing a dated landing in a bucket costs, after a year of days (part of `make bench`).

    python -m benchmarks.s3_listing [--days 365] [--objects 100000] [--rounds 3]

A landing of `--objects` small objects in `--days` dt=YYYY-MM-DD folders, on moto's S3 server
on 127.0.0.1; then one new day. Timed, with the LIST requests each makes: the whole landing
listed (what a run did before the listing kept to open days, and what a whole listing does),
against what a run lists now (jobs/run/pending.py: the top level, the newest day taken and
the days within the lateness of today). The LIST requests are boto3's; the run's listing of
the landing's top level (pyarrow's, one request a 1,000 names) comes on top. Figures, not
assertions; medians of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

from jobs.declare.parts import Listing

FIRST_DAY = date(2025, 1, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from benchmarks.s3_run import local_s3
    from jobs.lake import listings, s3
    from jobs.run.pending import listed_days, open_days

    with local_s3() as settings, s3.environment(settings):
        client = s3.client()
        client.create_bucket(Bucket="lake")
        started = time.perf_counter()

        def put(number: int) -> None:
            day = FIRST_DAY + timedelta(days=number * args.days // args.objects)
            client.put_object(Bucket="lake", Key=f"landing/dt={day}/e-{number:07d}.json", Body=b"{}\n")

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(put, range(args.objects)))
        new_day = FIRST_DAY + timedelta(days=args.days)
        client.put_object(Bucket="lake", Key=f"landing/dt={new_day}/new.json", Body=b"{}\n")
        print(
            f"S3 listing: {args.objects:,} objects in {args.days} dt= folders, then one new day "
            f"(landed in {time.perf_counter() - started:.0f} s)"
        )

        requests = {"n": 0}
        client.meta.events.register(
            "before-call.s3.ListObjectsV2", lambda **_: requests.__setitem__("n", requests["n"] + 1)
        )
        landing = "s3a://lake/landing"
        last_taken = str(new_day - timedelta(days=1))
        # The newest day taken as a run would have recorded it; a whole listing a moment ago.
        state = {"newest_day": last_taken, "whole_at_ms": int(time.time() * 1000)}
        now_ms = int(time.mktime(new_day.timetuple()) * 1000) + 12 * 3600 * 1000  # noon of the new day

        def whole() -> int:
            return len(listings.listing(landing).files)

        def open_only() -> int:
            return len(listed_days(landing, open_days(landing, Listing(), state, now_ms)).files)

        for name, listed in (("the whole landing", whole), ("the open days (now)", open_only)):
            seconds, calls, found = [], [], 0
            for _ in range(args.rounds):
                requests["n"] = 0
                started = time.perf_counter()
                found = listed()
                seconds.append(time.perf_counter() - started)
                calls.append(requests["n"])
            print(
                f"  {name:22} {statistics.median(seconds):6.2f} s, {statistics.median(calls):5.0f} LIST requests, "
                f"{found:,} files listed"
            )


if __name__ == "__main__":
    main()
