#!/usr/bin/env python3
"""Seeded generator of the small Nexmark fixture used by tests/sqllogic/testdata/nexmark.slt.

Python 3 standard library only. The same rows feed the engine (as INSERT statements in nexmark.slt) and the
reference Postgres (run.sh), so both see exactly the same data.

    gen.py slt           the fixture as sqllogictest directives (INSERT statements, flush, restart), in two parts
                         separated by a line "-- PHASE 2" (nexmark.slt checks results between them)
    gen.py sql 1|2       plain SQL INSERTs of phase 1 only (1) or of phase 2 only (2), for Postgres
    gen.py summary       the per-stream maximum event times and watermarks after each phase

Design (so that every query has a non-trivial, unambiguous result):
  - event times are 2026-01-01 00:00:00 + [0, 60) s with a millisecond part that is never 0, so no event lies on
    a window boundary (windows are multiples of 2 s / 10 s) and no watermark (max - 4 s) equals a window end;
  - all event times are distinct, every stream is inserted in event-time order (nothing is ever late), in six
    chunks of 10 s; phase 1 = chunks 1..3 (times < 30 s), phase 2 = chunks 4..6 plus one row far in the future
    (00:05:00.x) on every stream, which moves every watermark past every window of the data;
  - bid prices are distinct, except one deliberate tie (same auction, same price, different times) that q9
    breaks with `dateTime ASC`; so MAX (q7) and ROW_NUMBER (q9) can never pick between equal rows; every sixth
    price is large, so that q14's filter (0.908 * price between 1M and 50M) keeps some bids, and the extras hold
    0 to 3 'c's for its count_char;
  - sellers often create auctions in the 10 s window they registered in (q8), category 10 is frequent and
    OR/ID/CA sellers exist (q3), a few auctions get many bids (q5), some bids fall after their auction expired
    (excluded by q4 and q9).
"""
import random
import sys
from datetime import datetime, timedelta

SEED = 20260101
BASE = datetime(2026, 1, 1, 0, 0, 0)
N_PERSONS, N_AUCTIONS, N_BIDS = 20, 30, 300

STATES = [("OR", "Portland"), ("ID", "Boise"), ("CA", "Oakland"), ("WA", "Seattle"), ("NY", "Albany"),
          ("AZ", "Phoenix")]
FIRST = ["ann", "bob", "cid", "dee", "eve", "fay", "gus", "hal", "ivy", "jon", "kim", "lou", "max", "ned",
         "oli", "pam", "quin", "rob", "sue", "tom"]
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]


def ts_literal(ms):
    """TIMESTAMP literal for BASE + ms milliseconds (Postgres text form: no trailing zeros)."""
    t = BASE + timedelta(milliseconds=ms)
    s = t.strftime("%Y-%m-%d %H:%M:%S")
    frac = ms % 1000
    if frac:
        s += ("." + "%03d" % frac).rstrip("0")
    return "TIMESTAMP '%s'" % s


def generate():
    rnd = random.Random(SEED)
    used = set()

    def fresh_time(lo, hi):
        # a time in [lo, hi) milliseconds with a non-zero millisecond part, distinct from every other event
        while True:
            ms = rnd.randrange(lo, hi)
            if ms % 1000 != 0 and ms not in used:
                used.add(ms)
                return ms

    # persons: one per 2.5 s slot over [0, 50) s, so every 10 s window has registrations
    persons = []
    times = [fresh_time(i * 2500, (i + 1) * 2500) for i in range(N_PERSONS)]
    for i, ms in enumerate(times):
        pid = 1001 + i
        state, city = STATES[rnd.randrange(len(STATES))] if i % 3 else STATES[(i // 3) % 3]  # many OR/ID/CA
        persons.append(dict(id=pid, name=FIRST[i], email="%s@example.com" % FIRST[i],
                            card="4000-0000-0000-%04d" % (pid % 10000), city=city, state=state, ms=ms,
                            extra="p%d" % pid))

    # auctions: spread over [1, 58) s; the seller is often a person registered in the same 10 s window
    auctions = []
    atimes = [fresh_time(1000 + i * 1900, 1000 + (i + 1) * 1900) for i in range(N_AUCTIONS)]
    for i, ms in enumerate(atimes):
        aid = 2001 + i
        known = [p for p in persons if p["ms"] <= ms]
        same_window = [p for p in known if p["ms"] // 10000 == ms // 10000]
        if same_window and rnd.random() < 0.6:
            seller = rnd.choice(same_window)
        else:
            seller = rnd.choice(known)
        category = 10 if rnd.random() < 0.4 else rnd.choice([11, 12, 13])
        expires = ms + rnd.randrange(5000, 30000) + 1  # keep a non-zero millisecond part
        if expires % 1000 == 0:
            expires += 7
        auctions.append(dict(id=aid, item="item%d" % aid, desc="desc%d" % aid,
                             initial=rnd.randrange(1, 50) * 10, reserve=rnd.randrange(50, 200) * 10, ms=ms,
                             expires=expires, seller=seller["id"], category=category, extra="a%d" % aid))

    # bids: distinct prices; "hot" auctions get more bids; some bids land after their auction expired
    hot = set(rnd.sample([a["id"] for a in auctions], 6))
    prices = rnd.sample(range(100, 20000), N_BIDS)
    bids = []
    btimes = [fresh_time(3000 + i * 57000 // N_BIDS, 3000 + (i + 1) * 57000 // N_BIDS) for i in range(N_BIDS)]
    for i, ms in enumerate(btimes):
        open_ = [a for a in auctions if a["ms"] <= ms]
        weights = [(6 if a["id"] in hot else 1) * (1 if ms <= a["expires"] else 0.3) for a in open_]
        a = rnd.choices(open_, weights)[0]
        bidder = rnd.choice([p for p in persons if p["ms"] <= ms] or persons[:1])
        ch = rnd.choice(CHANNELS)
        # every sixth bid is large (x 1000 + 7: still distinct), so that q14's filter 0.908 * price in (1M, 50M)
        # keeps some; extras hold 0 to 3 'c's for q14's count_char
        price = prices[i] * 1000 + 7 if i % 6 == 2 else prices[i]
        bids.append(dict(auction=a["id"], bidder=bidder["id"], price=price, channel=ch,
                         url="https://www.nexmark.com/%s/item.htm?query=%d" % (ch.lower(), i % 7), ms=ms,
                         extra="b%d%s" % (i, "c" * (i % 7 % 4))))

    # the deliberate price tie for q9: the winning price of one auction repeated by a later bid on it, within
    # its open interval (so `dateTime ASC` decides), with a fresh time and a price no other bid has
    winners = {}
    for b in bids:
        a = next(x for x in auctions if x["id"] == b["auction"])
        if a["ms"] <= b["ms"] <= a["expires"]:
            cur = winners.get(a["id"])
            if cur is None or b["price"] > cur["price"]:
                winners[a["id"]] = b
    for aid in sorted(winners):
        w = winners[aid]
        a = next(x for x in auctions if x["id"] == aid)
        # a later bid at the same price, before expiry, in the same phase-2 chunk range
        if w["ms"] >= 31000 and a["expires"] - w["ms"] > 2000 and a["expires"] < 60000:
            ms = w["ms"] + 1234
            while ms in used or ms % 1000 == 0:
                ms += 1
            used.add(ms)
            bids.append(dict(auction=aid, bidder=1001 + (w["bidder"] - 1000) % N_PERSONS, price=w["price"],
                             channel="Apple", url="https://www.nexmark.com/apple/item.htm?query=tie", ms=ms,
                             extra="tie"))
            break
    bids.sort(key=lambda b: b["ms"])

    # far-future rows (00:05:00.x): push every watermark past every window of the data
    far_p = dict(id=1099, name="zed", email="zed@example.com", card="4000-0000-0000-1099", city="Oakland",
                 state="CA", ms=300100, extra="p1099")
    far_a = dict(id=2099, item="item2099", desc="desc2099", initial=100, reserve=500, ms=300200, expires=330200,
                 seller=1099, category=10, extra="a2099")
    far_b = dict(auction=2099, bidder=1001, price=20001, channel="Google",
                 url="https://www.nexmark.com/google/item.htm?query=far", ms=300300, extra="far")
    return persons, auctions, bids, (far_p, far_a, far_b)


def person_row(p):
    return "(%d, '%s', '%s', '%s', '%s', '%s', %s, '%s')" % (
        p["id"], p["name"], p["email"], p["card"], p["city"], p["state"], ts_literal(p["ms"]), p["extra"])


def auction_row(a):
    return "(%d, '%s', '%s', %d, %d, %s, %s, %d, %d, '%s')" % (
        a["id"], a["item"], a["desc"], a["initial"], a["reserve"], ts_literal(a["ms"]), ts_literal(a["expires"]),
        a["seller"], a["category"], a["extra"])


def bid_row(b):
    return "(%d, %d, %d, '%s', '%s', %s, '%s')" % (
        b["auction"], b["bidder"], b["price"], b["channel"], b["url"], ts_literal(b["ms"]), b["extra"])


def insert(table, rows, fmt):
    return "INSERT INTO %s VALUES\n  %s" % (table, ",\n  ".join(fmt(r) for r in rows))


def statements():
    """[(phase, kind, text)]: kind is 'sql' (an INSERT), 'flush' or 'restart'."""
    persons, auctions, bids, (far_p, far_a, far_b) = generate()
    out = []
    # the order of the three streams varies per chunk (right before left, interleaved); bids in two INSERTs
    orders = ["pab", "bap", "apb", "pba", "bpa", "abp"]
    for chunk in range(6):
        phase = 1 if chunk < 3 else 2
        lo, hi = chunk * 10000, (chunk + 1) * 10000
        cp = [p for p in persons if lo <= p["ms"] < hi]
        ca = [a for a in auctions if lo <= a["ms"] < hi]
        cb = [b for b in bids if lo <= b["ms"] < hi]
        for kind in orders[chunk]:
            if kind == "p" and cp:
                out.append((phase, "sql", insert("person", cp, person_row)))
            elif kind == "a" and ca:
                out.append((phase, "sql", insert("auction", ca, auction_row)))
            elif kind == "b" and cb:
                half = len(cb) // 2
                out.append((phase, "sql", insert("bid", cb[:half], bid_row)))
                out.append((phase, "sql", insert("bid", cb[half:], bid_row)))
        if chunk in (0, 3):
            out.append((phase, "flush", None))
    out.append((2, "sql", insert("person", [far_p], person_row)))
    out.append((2, "sql", insert("auction", [far_a], auction_row)))
    out.append((2, "sql", insert("bid", [far_b], bid_row)))
    return out


def summary():
    persons, auctions, bids, far = generate()
    lines = []
    for phase, limit in ((1, 30000), (2, None)):
        for name, rows, f in (("person", persons, far[0]), ("auction", auctions, far[1]), ("bid", bids, far[2])):
            ms = max(r["ms"] for r in rows if limit is None or r["ms"] < limit)
            if limit is None:
                ms = f["ms"]
            lines.append("phase %d %-7s max %s watermark %s" % (phase, name, ts_literal(ms)[11:-1],
                                                                ts_literal(ms - 4000)[11:-1]))
    lines.append("%d persons, %d auctions, %d bids (+1 far-future row each)" % (len(persons), len(auctions),
                                                                                len(bids)))
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mode = sys.argv[1]
    if mode == "slt":
        phase_seen = 1
        for phase, kind, text in statements():
            if phase != phase_seen:
                print("-- PHASE 2\n")
                phase_seen = phase
            if kind == "sql":
                print("statement ok\n%s\n" % text)
            else:
                print("%s\n" % kind)
    elif mode == "sql":
        want = int(sys.argv[2])
        for phase, kind, text in statements():
            if phase == want and kind == "sql":
                print(text + ";")
    elif mode == "summary":
        print(summary())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
