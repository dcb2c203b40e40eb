"""Clients for tests/cli/serve_test.sh: each check talks to a `tfm serve` on 127.0.0.1 and exits 1
with a message on the first thing that is wrong. Loopback only, a bounded number of requests, and a
socket timeout on every connection."""
import http.client
import json
import socket
import sys
import threading
import urllib.parse

TIMEOUT = 120  # seconds a socket may wait: a safety net, never the condition a check waits for


def connect(port):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)


def post(port, path, body, content_type="application/json", headers=None, conn=None):
    own = conn is None
    conn = conn or connect(port)
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode("utf-8")
    conn.request("POST", path, body, {"Content-Type": content_type, **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    if own:
        conn.close()
    return response, data


def get(port, path):
    conn = connect(port)
    conn.request("GET", path)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def run_clients(client, count):
    """Runs `client(c)` for c in 0..count-1 on threads of their own and waits for them all."""
    threads = [threading.Thread(target=client, args=(c,)) for c in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def expect_error(response, data, status, what):
    check(response.status == status, f"{what}: status {response.status}, expected {status} ({data[:200]!r})")
    check(response.getheader("Content-Type", "").startswith("application/json"), f"{what}: error body is not JSON")
    check("error" in json.loads(data), f"{what}: no \"error\" in {data[:200]!r}")


def parity(port, inputs, expected, clients):
    """Every line sent alone by one of `clients` concurrent clients comes back as `tfm translate`'s."""
    lines, want = read_lines(inputs), read_lines(expected)
    got = [None] * len(lines)
    next_line = [0]
    lock = threading.Lock()
    failures = []

    def client(_):
        conn = connect(port)
        while True:
            with lock:
                if next_line[0] >= len(lines):
                    return
                i = next_line[0]
                next_line[0] += 1
            try:
                response, data = post(port, "/translate", {"q": lines[i], "source": "en", "target": "de"}, conn=conn)
                if response.status != 200:
                    failures.append(f"line {i + 1}: status {response.status}")
                got[i] = json.loads(data)["translatedText"]
            except Exception as error:  # noqa: BLE001 - any failure of a request is the finding
                failures.append(f"line {i + 1}: {type(error).__name__} {error}")
                conn.close()
                conn = connect(port)

    run_clients(client, clients)
    check(not failures, "; ".join(failures[:5]))
    differ = [i + 1 for i in range(len(lines)) if got[i] != want[i]]
    check(not differ, f"{len(differ)} of {len(lines)} lines differ from tfm translate, first {differ[:5]}")
    # LibreTranslate's shape with q as an array, and as a form.
    response, data = post(port, "/translate", {"q": lines[:10], "source": "en", "target": "de", "format": "text"})
    check(response.status == 200 and json.loads(data)["translatedText"] == want[:10], "q as an array")
    form = urllib.parse.urlencode({"q": lines[0], "source": "en", "target": "de"})
    response, data = post(port, "/translate", form, "application/x-www-form-urlencoded")
    check(response.status == 200 and json.loads(data)["translatedText"] == want[0], "q in a form")
    response, data = post(port, "/translate", {"q": lines[1], "source": "en", "target": "de", "alternatives": 2})
    answer = json.loads(data)
    check(response.status == 200 and isinstance(answer["alternatives"], list), f"alternatives: {answer}")
    print(f"parity: {len(lines)} lines from {clients} clients equal tfm translate's")


def api(port, inputs, expected):
    """POST /v1/translate, GET /languages, /health, /ready, /metrics and the page."""
    lines, want = read_lines(inputs)[:5], read_lines(expected)[:5]
    response, data = post(port, "/v1/translate", {"text": lines, "source": "en", "target": "de", "alignment": True,
                                                  "beam": 3, "nbest": 2})
    check(response.status == 200, f"/v1/translate: {response.status} {data[:200]!r}")
    answer = json.loads(data)
    check(answer["model"] == "en-de" and len(answer["translations"]) == 5, f"/v1/translate: {answer}")
    for record in answer["translations"]:
        if not record["translation"]:
            continue
        links = [tuple(map(int, pair.split("-"))) for pair in record["alignment"].split()]
        check([t for _, t in links] == list(range(len(record["tokens"]))), f"one link per subword: {record}")
        check(len(record["nbest"]) == 2 and record["nbest"][0]["translation"] == record["translation"], "nbest")
        # Flagged exactly when the best takes every subword the server's --max-len-b 12 allows.
        check(record.get("max_length_reached", False) == (len(record["tokens"]) == 11), f"max_length_reached: {record}")
    response, data = post(port, "/v1/translate", {"text": lines, "source": "en", "target": "de"})
    check([r["translation"] for r in json.loads(data)["translations"]] == want, "/v1/translate with defaults")
    check(json.loads(get(port, "/languages")[1]) == [{"code": "de", "name": "German", "targets": []},
                                                     {"code": "en", "name": "English", "targets": ["de"]}],
          "/languages")
    check(json.loads(get(port, "/health")[1]) == {"status": "ok"}, "/health")
    response, data = get(port, "/ready")
    check(response.status == 200 and json.loads(data)["models"] == ["en-de"], "/ready")
    metrics = get(port, "/metrics")[1].decode()
    for name in ["tfm_requests_total{path=\"/translate\",status=\"200\"}", "tfm_sentences_total",
                 "tfm_queue_sentences", "tfm_batch_sentences_bucket", "tfm_request_duration_seconds_bucket",
                 "tfm_decode_seconds_total", "tfm_running_batch_steps_total", "tfm_joined_sentences_total",
                 "tfm_running_batch_sentences_bucket"]:
        check(name in metrics, f"/metrics lacks {name}")
    # A request's own settings make a lane that goes once no request holds it: after 20 length
    # penalties and one request with the defaults (the one decoding thread takes its batch only
    # once the batches before it have let go of their sentences), the default lane alone is held.
    for i in range(20):
        response, data = post(port, "/v1/translate", {"text": lines[0], "source": "en", "target": "de",
                                                      "length_penalty": 2 + i / 100})
        check(response.status == 200, f"length penalty {2 + i / 100}: {response.status} {data[:200]!r}")
    check(post(port, "/v1/translate", {"text": lines[0], "source": "en", "target": "de"})[0].status == 200,
          "a request with the defaults")
    lanes = [line for line in get(port, "/metrics")[1].decode().splitlines() if line.startswith("tfm_lanes ")]
    check(lanes == ["tfm_lanes 1"], f"lanes held after the requests were answered: {lanes}, expected tfm_lanes 1")
    response, data = get(port, "/")
    page = data.decode()
    check(response.status == 200 and "<textarea" in page and "/translate" in page, "the page")
    check("src=\"http" not in page and "href=\"http" not in page, "the page loads nothing from the network")
    print("api: /v1/translate, /languages, /health, /ready, /metrics and / answer as documented")


def errors(port, invalid_input, invalid_expected):
    """Each refusal is a JSON error with its status, and the server keeps serving."""
    ok = {"q": "one", "source": "en", "target": "de"}
    expect_error(*post(port, "/translate", "{\"q\": "), 400, "malformed JSON")
    expect_error(*post(port, "/translate", "[1, 2]"), 400, "JSON that is not an object")
    expect_error(*post(port, "/translate", {"source": "en", "target": "de"}), 400, "missing q")
    expect_error(*post(port, "/translate", {**ok, "target": "fr"}), 400, "unknown pair")
    expect_error(*post(port, "/translate", {**ok, "q": 7}), 400, "q of the wrong type")
    expect_error(*post(port, "/translate", "q=one&source=en", "text/plain"), 400, "a body neither JSON nor form")
    expect_error(*post(port, "/translate", {**ok, "q": "x" * 5000}), 413, "a body over --max-body-bytes")
    expect_error(*post(port, "/translate", {**ok, "q": ["one"] * 11}), 413, "more than --max-sentences-per-request")
    expect_error(*post(port, "/v1/translate", {"text": "one", "source": "en", "target": "de", "beam": 99}), 400,
                 "a beam over --max-beam")
    expect_error(*post(port, "/translate", {**ok, "alternatives": 2**63 - 1}), 400, "alternatives at the largest int64")
    expect_error(*get(port, "/no-such-page"), 404, "unknown path")
    # A path that decodes to two lines (serve_test.sh checks the log holds it as one).
    expect_error(*get(port, "/forged%0Ainfo%20POST%20/translate%20200"), 404, "a path with a newline")
    # Invalid UTF-8 in a form is translated as `tfm translate` translates the same bytes.
    with open(invalid_input, "rb") as f:
        raw = f.read().rstrip(b"\n")
    response, data = post(port, "/translate", b"source=en&target=de&q=" + urllib.parse.quote_from_bytes(raw).encode(),
                          "application/x-www-form-urlencoded")
    check(response.status == 200, f"invalid UTF-8: status {response.status}")
    check(json.loads(data)["translatedText"] == read_lines(invalid_expected)[0], "invalid UTF-8 differs")
    response, data = post(port, "/translate", b"{\"q\": \"a\xff\xfe\", \"source\": \"en\", \"target\": \"de\"}")
    check(response.status == 200, f"invalid UTF-8 in JSON: status {response.status}")
    response, data = post(port, "/translate", ok)
    check(response.status == 200, "the server stopped serving after the errors")
    print("errors: 400, 413, 404 as JSON; invalid UTF-8 translated; still serving")


def slow_clients(port):
    """Clients that stall or vanish mid-request cost a connection, never the service."""
    stalled = []
    for _ in range(4):  # slowloris: headers begun, never finished
        s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        stalled.append(s)
    vanished = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)  # gone mid-body
    vanished.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"q\": \"one")
    vanished.close()
    response, _ = post(port, "/translate", {"q": "one two", "source": "en", "target": "de"})
    check(response.status == 200, f"a request beside stalled clients: {response.status}")
    for s in stalled:
        s.close()
    response, _ = post(port, "/translate", {"q": "two", "source": "en", "target": "de"})
    check(response.status == 200, "a request after the stalled clients left")
    print("slow clients: 4 stalled and 1 vanished; others served")


def queue_limit(port, clients, max_requests):
    """With a queue of one sentence, concurrent clients get 200 or 503 with Retry-After, nothing else."""
    statuses = {}
    lock = threading.Lock()
    sent = [0]
    seen_503 = threading.Event()
    failures = []

    def client(_):
        conn = connect(port)
        while not seen_503.is_set():
            with lock:
                if sent[0] >= max_requests:
                    return
                sent[0] += 1
            response, data = post(port, "/translate", {"q": "one two three", "source": "en", "target": "de"},
                                  conn=conn)
            with lock:
                statuses[response.status] = statuses.get(response.status, 0) + 1
            if response.status == 503:
                if response.getheader("Retry-After") is None or "error" not in json.loads(data):
                    failures.append("a 503 without Retry-After or a JSON error")
                seen_503.set()
            elif response.status != 200:
                failures.append(f"status {response.status}")

    run_clients(client, clients)
    check(not failures, "; ".join(failures[:3]))
    check(statuses.get(503, 0) > 0, f"no 503 in {sent[0]} requests against a queue of one: {statuses}")
    print(f"queue limit: {statuses}")


def timeout(port):
    expect_error(*post(port, "/translate", {"q": "one two three", "source": "en", "target": "de"}), 504,
                 "a request past --request-timeout")
    print("timeout: 504")


def api_key(port, key):
    body = {"q": "one", "source": "en", "target": "de"}
    expect_error(*post(port, "/translate", body), 403, "no API key")
    expect_error(*post(port, "/translate", {**body, "api_key": "wrong"}), 403, "a wrong API key")
    expect_error(*post(port, "/translate", {**body, "api_key": key[:-1] + "?"}), 403, "a key wrong in its last byte")
    expect_error(*post(port, "/translate", {**body, "api_key": key[:-1]}), 403, "a prefix of the key")
    expect_error(*post(port, "/translate", {**body, "api_key": key + key}), 403, "the key twice")
    check(post(port, "/translate", {**body, "api_key": key})[0].status == 200, "the key in the body")
    check(post(port, "/translate", body, headers={"Authorization": "Bearer " + key})[0].status == 200,
          "the key as a bearer token")
    print("api key: 403 without it, 200 with it")


def until_stopped(port, inputs, expected, clients, progress):
    """Clients on keep-alive connections translate until the server says Connection: close; every
    request sent is answered, and correctly. Once every client has had an answer (so every
    connection is one the server accepted) and 50 requests are answered, writes "under load" to
    `progress`: the moment to stop the server."""
    lines, want = read_lines(inputs), read_lines(expected)
    answered = [0]
    answered_by = [0] * clients
    signalled = [False]
    lock = threading.Lock()
    failures = []
    closed = [0]
    connections = [connect(port) for _ in range(clients)]
    for conn in connections:
        conn.connect()

    def client(c):
        conn = connections[c]
        for n in range(100000):
            i = (c * 37 + n) % len(lines)
            try:
                response, data = post(port, "/translate", {"q": lines[i], "source": "en", "target": "de"}, conn=conn)
            except Exception as error:  # noqa: BLE001
                failures.append(f"a request sent was not answered: {type(error).__name__} {error}")
                return
            if response.status != 200 or json.loads(data)["translatedText"] != want[i]:
                failures.append(f"line {i + 1}: status {response.status}, {data[:100]!r}")
                return
            with lock:
                answered[0] += 1
                answered_by[c] += 1
                if not signalled[0] and min(answered_by) > 0 and answered[0] >= 50:
                    signalled[0] = True
                    with open(progress, "w") as f:
                        f.write("under load\n")
            if response.getheader("Connection", "").lower() == "close":
                with lock:
                    closed[0] += 1
                return
        failures.append("the server was never stopped")

    run_clients(client, clients)
    check(not failures, "; ".join(failures[:3]))
    print(f"stopped under load: {answered[0]} requests answered, none lost; {closed[0]} clients told to close")


if __name__ == "__main__":
    command, port, *args = sys.argv[1:]
    port = int(port)
    {"parity": lambda: parity(port, args[0], args[1], int(args[2])),
     "api": lambda: api(port, args[0], args[1]),
     "errors": lambda: errors(port, args[0], args[1]),
     "slow": lambda: slow_clients(port),
     "queue": lambda: queue_limit(port, int(args[0]), int(args[1])),
     "timeout": lambda: timeout(port),
     "key": lambda: api_key(port, args[0]),
     "until-stopped": lambda: until_stopped(port, args[0], args[1], int(args[2]), args[3])}[command]()
