#!/usr/bin/env python3
"""A bounded load generator for `tfm serve`, loopback only: CLIENTS concurrent clients, each on one
keep-alive connection, send one sentence per request (LibreTranslate's POST /translate) in a loop
for SECONDS, cycling through the lines of SOURCE. A client refused with 503 waits as its
Retry-After says before the next request. Prints one JSON line: sentences/s, p50/p99 latency in
ms, statuses, errors, and how many answers exceeded the request timeout.

usage: serve_load.py PORT SOURCE CLIENTS SECONDS [--requests N] [--timeout S] [--source-lang en --target-lang de]
(--requests N: each client stops after N requests, from the first line of SOURCE, or at SECONDS.)
"""
import argparse
import asyncio
import json
import time


async def request(reader, writer, body):
    writer.write(b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("closed by the server")
    status = int(status_line.split()[1])
    length, close, retry_after = 0, False, 0.0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
        elif name.strip().lower() == "connection" and value.strip().lower() == "close":
            close = True
        elif name.strip().lower() == "retry-after":
            retry_after = float(value)
    await reader.readexactly(length)
    return status, close, retry_after


async def client(args, lines, offset, deadline, results):
    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    n = offset
    while time.monotonic() < deadline and (args.requests == 0 or n - offset < args.requests):
        body = json.dumps({"q": lines[n % len(lines)], "source": args.source_lang,
                           "target": args.target_lang}).encode()
        n += 1
        start = time.monotonic()
        try:
            status, close, retry_after = await asyncio.wait_for(request(reader, writer, body), args.timeout + 30)
        except Exception as error:  # noqa: BLE001 - counted, then a fresh connection
            results["errors"].append(type(error).__name__)
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
            continue
        elapsed = time.monotonic() - start
        results["statuses"][status] = results["statuses"].get(status, 0) + 1
        if status == 200:
            results["latencies"].append(elapsed)
        if elapsed > args.timeout:
            results["late"] += 1
        if status == 503 and retry_after > 0:
            # A well-behaved client waits as told: retrying at once only measures how fast the
            # server and this generator can trade refusals, on the cores decoding needs.
            await asyncio.sleep(min(retry_after, max(0.0, deadline - time.monotonic())))
        if close:
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("source")
    parser.add_argument("clients", type=int)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--requests", type=int, default=0)
    parser.add_argument("--source-lang", default="en")
    parser.add_argument("--target-lang", default="de")
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    results = {"statuses": {}, "latencies": [], "errors": [], "late": 0}
    start = time.monotonic()
    deadline = start + args.seconds
    await asyncio.gather(*(client(args, lines, c * len(lines) // args.clients, deadline, results)
                           for c in range(args.clients)))
    elapsed = time.monotonic() - start
    latencies = sorted(results["latencies"])
    percentile = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0
    print(json.dumps({"clients": args.clients, "seconds": round(elapsed, 1),
                      "sentences_per_s": round(len(latencies) / elapsed, 1),
                      "p50_ms": round(percentile(0.5), 1), "p99_ms": round(percentile(0.99), 1),
                      "statuses": results["statuses"], "errors": len(results["errors"]),
                      "late": results["late"]}))


if __name__ == "__main__":
    asyncio.run(main())
