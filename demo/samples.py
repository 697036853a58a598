"""Sample arrivals for each declared pipeline: what the demo lands, and what tests reuse.

An arrival is a few files of newline-delimited JSON lines ({file name: lines}). Every
pipeline's samples include late records (behind the watermark by the time they land)
and records that must be quarantined, so the demo shows what happens to them.
Deterministic: the same seed gives the same files, so a rerun of the demo lands nothing new.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Arrivals = list[dict[str, list[str]]]

START = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)
USERS = ["user1", "user2", "user3", "user4"]
EVENTS = ["click", "view", "scroll", "purchase"]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _events(rng: random.Random, first_id: int, start: datetime, minutes: int, count: int) -> list[str]:
    moments = sorted(start + timedelta(seconds=rng.randrange(minutes * 60)) for _ in range(count))
    return [
        json.dumps(
            {
                "event_id": f"e-{first_id + i}",
                "user_id": rng.choice(USERS),
                "event": rng.choice(EVENTS),
                "eventtimestamp": _iso(moment),
                "page": f"/p/{rng.randrange(20)}",  # an extra field: allowed and ignored
            }
        )
        for i, moment in enumerate(moments)
    ]


def clickstream_arrivals(seed: int = 7) -> Arrivals:
    """Four arrivals, each a few files of newline-delimited JSON lines."""
    rng = random.Random(seed)
    late = [  # behind the watermark by the time they land in arrival 3
        json.dumps(
            {"event_id": "late-1", "user_id": "user1", "event": "click", "eventtimestamp": "2023-07-30T10:01:10Z"}
        ),
        json.dumps(
            {"event_id": "late-2", "user_id": "user1", "event": "view", "eventtimestamp": "2023-07-30T10:01:50Z"}
        ),
        json.dumps(
            {"event_id": "late-3", "user_id": "user2", "event": "click", "eventtimestamp": "2023-07-30T10:02:30Z"}
        ),
    ]
    bad = [
        '{"event_id": "bad-1", "user_id": "user3", "event": "click", "eventtimestamp": ',  # cut off
        json.dumps({"event_id": "bad-2", "event": "click", "eventtimestamp": "2023-07-30T10:06:00Z"}),  # no user
        json.dumps({"event_id": "bad-3", "user_id": "user4", "event": "click", "eventtimestamp": "30/07/2023 10:06"}),
    ]
    # Records that parse but break a declared rule (jobs/pipelines/clickstream.yaml, rules).
    misspelt = json.dumps(  # known_event: quarantined
        {"event_id": "rule-1", "user_id": "user3", "event": "clik", "eventtimestamp": "2023-07-30T10:05:10Z"}
    )
    no_id = json.dumps(
        {"user_id": "user1", "event": "view", "eventtimestamp": "2023-07-30T10:10:40Z"}
    )  # has_event_id: kept
    load_test = json.dumps(  # no_load_test_traffic: stops the run, until its file is quarantined
        {"event_id": "lt-1", "user_id": "loadtest-42", "event": "click", "eventtimestamp": "2023-07-30T10:15:00Z"}
    )
    # Offsets (+02:00) are accepted: this is 10:07:30 UTC.
    offset_event = json.dumps(
        {"event_id": "tz-1", "user_id": "user2", "event": "view", "eventtimestamp": "2023-07-30T12:07:30+02:00"}
    )
    return [
        {"arrival-1-a.json": _events(rng, 1, START, 4, 40), "arrival-1-b.json": _events(rng, 100, START, 4, 20)},
        {"arrival-2-a.json": [*_events(rng, 200, START + timedelta(minutes=4), 5, 40), bad[0], offset_event, misspelt]},
        {
            "arrival-3-a.json": [*_events(rng, 300, START + timedelta(minutes=9), 5, 40), *late, bad[1], no_id],
            "arrival-3-empty.json": [],
        },
        {
            "arrival-4-a.json": _events(rng, 400, START + timedelta(minutes=14), 6, 40),
            "arrival-4-only-bad.json": [bad[2], "not json at all"],
            "arrival-4-load-test.json": [load_test],
        },
    ]


def clickstream_unique_arrivals() -> Arrivals:
    """The clickstream samples, plus the repeats a retrying producer lands."""
    arrivals = clickstream_arrivals()
    first = arrivals[0]["arrival-1-a.json"]
    arrivals[0]["arrival-1-a.json"] = [*first, *first[:3]]  # repeated within one file
    arrivals[1]["arrival-2-retry.json"] = first[5:10]  # a retry one arrival later: dropped as duplicates
    arrivals[3]["arrival-4-retry.json"] = first[10:12]  # a retry far behind the watermark: late
    return arrivals


def clickstream_inferred_arrivals() -> Arrivals:
    """The clickstream samples; from arrival 3 on, producers add fields the first run never saw."""
    arrivals = clickstream_arrivals()
    changed = [
        json.dumps({**json.loads(line), "campaign": "summer", "device": {"os": "ios", "app": "2.1"}})
        for line in arrivals[2]["arrival-3-a.json"][:6]
    ]
    arrivals[2]["arrival-3-a.json"] = changed + arrivals[2]["arrival-3-a.json"][6:]
    return arrivals


# Dimension tables some pipelines join with: {pipeline: {file name under <root>/dimensions/: text}}.
# user4 has no row: with `unmatched: quarantine` its events are quarantined.
DIMENSIONS = {
    "clickstream_enriched": {
        "users.csv": "user_id,country,plan\nuser1,DE,pro\nuser2,FR,free\nuser3,US,team\n",
    },
}


def rack_temperatures_arrivals(seed: int = 11) -> Arrivals:
    """Three racks reporting every 30 seconds; rack2 runs hot for a while."""
    rng = random.Random(seed)

    def readings(start_minute: int, minutes: int) -> list[str]:
        lines = []
        for step in range(minutes * 2):
            moment = START + timedelta(minutes=start_minute, seconds=30 * step)
            for rack in ("rack1", "rack2", "rack3"):
                hot = rack == "rack2" and 12 <= start_minute + step / 2 < 20
                temperature = round(rng.uniform(101, 108) if hot else rng.uniform(70, 95), 1)
                lines.append(json.dumps({"rack": rack, "temperature": temperature, "ts": _iso(moment)}))
        return lines

    late = [  # by arrival 3 the watermark is 10:09:30
        json.dumps({"rack": "rack1", "temperature": 80.0, "ts": "2023-07-30T09:58:00Z"}),  # both windows closed
        json.dumps({"rack": "rack1", "temperature": 81.0, "ts": "2023-07-30T10:02:00Z"}),  # counts in 10:00-10:10
    ]
    bad = [
        json.dumps({"rack": "rack3", "ts": "2023-07-30T10:21:00Z"}),  # no temperature
        json.dumps({"rack": "rack3", "temperature": "hot", "ts": "2023-07-30T10:21:00Z"}),  # not a number
        '{"rack": "rack1", "temperature": 9',  # cut off
        # A faulty sensor: breaks the rule physical_temperature, quarantined.
        json.dumps({"rack": "rack1", "temperature": 9000.0, "ts": "2023-07-30T10:15:10Z"}),
    ]
    return [
        {"racks-1.json": readings(0, 10)},
        {"racks-2.json": readings(10, 10), "racks-2-bad.json": [*bad[:2], bad[3]]},
        {"racks-3.json": [*readings(20, 10), *late, bad[2]]},
    ]


def device_steps_arrivals(seed: int = 13) -> Arrivals:
    """Four devices reporting steps every minute; one device's clock is an hour behind."""
    rng = random.Random(seed)

    def readings(first_id: int, start_minute: int, minutes: int, device_ids=(1, 2, 3, 4)) -> list[str]:
        lines = []
        for step in range(minutes):
            moment = START + timedelta(minutes=start_minute + step, seconds=rng.randrange(60))
            for device in device_ids:
                steps = rng.randrange(0, 120)
                lines.append(
                    json.dumps(
                        {
                            "id": first_id + len(lines),
                            "user_id": 100 + device,
                            "device_id": device,
                            "num_steps": steps,
                            "miles_walked": round(steps * 0.0004, 4),
                            "calories_burnt": round(steps * 0.04, 2),
                            "timestamp": moment.strftime("%Y-%m-%d %H:%M:%S"),
                        }
                    )
                )
        return lines

    lagging_clock = readings(9000, -60, 2, device_ids=(4,))  # an hour behind: late, dropped
    bad = [
        json.dumps({"id": 1, "device_id": 2, "timestamp": "2023-07-30 10:31:00"}),  # no num_steps
        json.dumps({"id": 2, "device_id": 2, "num_steps": 10, "timestamp": "2023-07-30T10:31:00Z"}),  # wrong format
        # Rules: non_negative_steps (quarantined), plausible_steps (kept and counted).
        json.dumps({"id": 3, "device_id": 1, "num_steps": -40, "timestamp": "2023-07-30 10:30:10"}),
        json.dumps({"id": 4, "device_id": 3, "num_steps": 60000, "timestamp": "2023-07-30 10:30:20"}),
    ]
    return [
        {"steps-1.json": readings(0, 0, 12)},
        {"steps-2.json": readings(1000, 12, 12), "steps-2-late.json": lagging_clock},
        {"steps-3.json": [*readings(2000, 24, 12), *bad]},
    ]


def rack_alerts_arrivals() -> Arrivals:
    """The rack temperature samples (rack2 runs hot for a while: WARNING, then NORMAL),
    plus rack3 spiking twice in a row, which is not enough for a WARNING."""
    arrivals = rack_temperatures_arrivals()
    spikes = [
        json.dumps({"rack": "rack3", "temperature": temperature, "ts": f"2023-07-30T10:{minute}:45Z"})
        for minute, temperature in (("25", 104.0), ("26", 100.0), ("27", 99.9))
    ]
    arrivals[2]["racks-3-spikes.json"] = spikes
    return arrivals


def spending_sessions_arrivals(seed: int = 17) -> Arrivals:
    """Four users' transactions over six hours, in three arrivals of two hours each; gaps
    of more than an hour split sessions. Also late transactions and unusable lines."""
    rng = random.Random(seed)

    def transactions(first_hour: int, prefix: str) -> list[str]:
        lines = []
        for user in ("alice", "bob", "carol", "dave"):
            moment = START + timedelta(hours=first_hour, minutes=rng.randrange(30))
            while moment < START + timedelta(hours=first_hour + 2):
                lines.append(
                    json.dumps(
                        {
                            "userId": user,
                            "transactionId": f"{prefix}-{len(lines)}",
                            "transactionTime": _iso(moment),
                            "amount": round(rng.uniform(1, 120), 2),
                        }
                    )
                )
                # Mostly minutes apart; now and then a pause of over an hour ends the session.
                pause = rng.choice([5, 10, 20, 40, 55, 75, 90])
                moment += timedelta(minutes=pause, seconds=rng.randrange(60))
        return sorted(lines, key=lambda line: json.loads(line)["transactionTime"])

    late = [json.dumps({"userId": "bob", "transactionId": "late-1", "transactionTime": _iso(START), "amount": 9.5})]
    bad = [
        json.dumps({"transactionId": "bad-1", "transactionTime": _iso(START), "amount": 3.0}),  # no user
        json.dumps({"userId": "dave", "transactionId": "bad-2", "transactionTime": _iso(START), "amount": "ten"}),
        json.dumps(  # breaks the rule non_negative_amount: quarantined
            {
                "userId": "carol",
                "transactionId": "bad-3",
                "transactionTime": _iso(START + timedelta(hours=3)),
                "amount": -20.0,
            }
        ),
    ]
    return [
        {"transactions-1.json": transactions(0, "t1")},
        {"transactions-2.json": [*transactions(2, "t2"), *bad]},
        {"transactions-3.json": transactions(4, "t3"), "transactions-3-late.json": late},
    ]


def ad_arrivals(seed: int = 19) -> Arrivals:
    """Impressions of five ads over three hours, and clicks: most within the hour after an
    impression of their ad, some later than that or before any (no match). Each side
    lands in its own folder. Also a late impression, a late click and unusable lines."""
    rng = random.Random(seed)
    ads = [f"ad-{n}" for n in range(1, 6)]

    def hour(number: int) -> dict[str, list[str]]:
        start = START + timedelta(hours=number)
        shown = sorted(start + timedelta(seconds=rng.randrange(3600)) for _ in range(12))
        impressions = [
            {"impression_id": f"i{number}-{n}", "ad_id": rng.choice(ads), "impression_time": _iso(moment)}
            for n, moment in enumerate(shown)
        ]
        clicks = []
        for n, impression in enumerate(impressions[::2]):
            after = timedelta(seconds=rng.randrange(4800))  # mostly within the hour; some later
            moment = datetime.fromisoformat(impression["impression_time"]) + after
            clicks.append({"click_id": f"c{number}-{n}", "ad_id": impression["ad_id"], "click_time": _iso(moment)})
        return {
            f"impressions/impressions-{number}.json": [json.dumps(i) for i in impressions],
            f"clicks/clicks-{number}.json": [json.dumps(c) for c in sorted(clicks, key=lambda c: c["click_time"])],
        }

    arrivals = [hour(0), hour(1), hour(2)]
    arrivals[1]["impressions/impressions-1-bad.json"] = [
        json.dumps({"impression_id": "bad-1", "impression_time": _iso(START)}),  # no ad
        '{"impression_id": "bad-2", "ad_id": ',  # cut off
    ]
    arrivals[2]["impressions/impressions-2-late.json"] = [
        json.dumps({"impression_id": "late-1", "ad_id": "ad-1", "impression_time": _iso(START)})
    ]
    arrivals[1]["clicks/clicks-1-promo.json"] = [  # an ad id of another system: the rule known_ad warns
        json.dumps({"click_id": "promo-1", "ad_id": "promo-7", "click_time": _iso(START + timedelta(minutes=90))})
    ]
    arrivals[2]["clicks/clicks-2-late.json"] = [
        json.dumps({"click_id": "late-1", "ad_id": "ad-1", "click_time": _iso(START + timedelta(minutes=5))})
    ]
    return arrivals


REPOS = [(1296269, "octocat/Hello-World"), (724712, "rust-lang/rust"), (2325298, "torvalds/linux")]
ACTORS = [(583231, "octocat"), (9919, "github"), (1024025, "torvalds")]


def github_event(number: int, kind: str, moment: datetime, rng: random.Random, **changes) -> dict:
    """An activity event of the shape a code host's events API sends: nested objects, a
    list of commits in a push, and many fields no declaration names."""
    actor, repo = rng.choice(ACTORS), rng.choice(REPOS)
    payload: dict = {"action": "started"} if kind == "WatchEvent" else {"ref": "main", "ref_type": "branch"}
    if kind == "PushEvent":
        commits = [
            {"sha": f"{number:08x}{n:032x}", "author": {"name": actor[1]}, "message": f"change {n}", "distinct": True}
            for n in range(rng.randrange(1, 4))
        ]
        payload = {"push_id": 10**9 + number, "size": len(commits), "ref": "refs/heads/main", "commits": commits}
    event = {
        "id": str(30_000_000_000 + number),
        "type": kind,
        "actor": {"id": actor[0], "login": actor[1], "url": f"https://api.github.com/users/{actor[1]}"},
        "repo": {"id": repo[0], "name": repo[1], "url": f"https://api.github.com/repos/{repo[1]}"},
        "payload": payload,
        "public": True,
        "created_at": _iso(moment),
    }
    for path, value in changes.items():  # "repo__id" -> event["repo"]["id"]
        *parents, last = path.split("__")
        inner = event
        for name in parents:
            inner = inner[name]
        inner[last] = value
    return event


def github_activity_arrivals(seed: int = 19) -> Arrivals:
    """Four arrivals of activity events: pushes, stars and branches; pages that overlap
    (an event again), late events, and events of the wrong shape at depth 1, at depth 2
    and inside the list of commits."""
    rng = random.Random(seed)
    kinds = ["PushEvent", "PushEvent", "WatchEvent", "CreateEvent"]

    def page(first: int, start_minute: int, minutes: int, count: int) -> list[dict]:
        moments = sorted(
            START + timedelta(seconds=rng.randrange(start_minute * 60, (start_minute + minutes) * 60))
            for _ in range(count)
        )
        return [github_event(first + n, rng.choice(kinds), moment, rng) for n, moment in enumerate(moments)]

    pages = [page(0, 0, 4, 30), page(100, 4, 5, 30), page(200, 9, 5, 30), page(300, 14, 6, 30)]
    lines = [[json.dumps(event) for event in events] for events in pages]
    at = START + timedelta(minutes=7)
    wrong = [
        github_event(900, "PushEvent", at, rng, repo__id="1296269"),  # depth 1: a string for a long
        github_event(901, "PushEvent", at, rng, payload__size=2.5),  # depth 1: a fraction for a long
        github_event(902, "WatchEvent", at, rng, actor="octocat"),  # an object expected
    ]
    push = github_event(903, "PushEvent", at, rng)
    push["payload"]["commits"] = [{"sha": "a1", "message": "ok"}, {"sha": 1234, "message": "sha as a number"}]
    wrong.append(push)  # inside the list of commits
    no_repo = github_event(904, "WatchEvent", at, rng)
    del no_repo["repo"]
    late = [github_event(950 + n, "WatchEvent", START + timedelta(minutes=1, seconds=10 * n), rng) for n in range(3)]
    # Rules: known_event_type (a type the list does not know: kept, counted), non_negative_size (quarantined).
    ruled = [github_event(960, "SponsorshipEvent", at, rng), github_event(961, "PushEvent", at, rng, payload__size=-1)]
    return [
        {"events-page-1.json": lines[0][:20], "events-page-2.json": lines[0][15:]},  # 5 events on both pages
        {"events-page-3.json": [*lines[1], *(json.dumps(e) for e in [*wrong[:2], *ruled])]},
        {
            "events-page-4.json": [
                *lines[2],
                *(json.dumps(e) for e in [*wrong[2:], no_repo, *late]),
                '{"id": "9", "type": ',
            ]
        },
        {"events-page-5.json": [*lines[3], lines[2][-1]]},  # an event seen a page ago, again
    ]


SAMPLES: dict[str, Callable[[], Arrivals]] = {
    "clickstream": clickstream_arrivals,
    "clickstream_unique": clickstream_unique_arrivals,
    "clickstream_enriched": clickstream_arrivals,
    "clickstream_inferred": clickstream_inferred_arrivals,
    "device_steps": device_steps_arrivals,
    "rack_temperatures": rack_temperatures_arrivals,
    "rack_alerts": rack_alerts_arrivals,
    "spending_sessions": spending_sessions_arrivals,
    "ad_clicks": ad_arrivals,
    "ad_impressions": ad_arrivals,
    "github_activity": github_activity_arrivals,
}


def arrivals(pipeline: str) -> Arrivals:
    if pipeline not in SAMPLES:
        raise KeyError(f"no sample data for {pipeline!r}; samples exist for {', '.join(sorted(SAMPLES))}")
    return SAMPLES[pipeline]()
