#!/usr/bin/env python3
"""Python peer for `cargo xtask bench`: the payment-webhook workload done the way a Python team
would, with AWS Lambda Powertools' idempotency utility in front of a hand-written handler.

    python tests/peer/bench.py --endpoint http://127.0.0.1:PORT --table TABLE \
        --idempotency-table ITABLE --workload /path/workload.json --concurrency 8

Prints exactly one JSON line on stdout (figures of the timed run); diagnostics go to stderr.
Exits non-zero if any delivery fails or the bookings do not check out.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import datetime as dt
import functools
import hashlib
import hmac
import json
import math
import random
import resource
import sys
import threading
import time
from collections import Counter, defaultdict
from decimal import Decimal

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

REGION = "eu-central-1"
# Standard Webhooks' tolerance, checked against a fixed "now" so a stored workload stays valid.
FIXED_NOW = 1800000010
TOLERANCE_S = 300
# A contended invoice: re-read and retry this many times at most (as the Rust side does).
MAX_ATTEMPTS = 40
# A repeat that arrives while its first delivery is still running gets Powertools'
# IdempotencyAlreadyInProgressError (a 5xx to the sender); the driver plays the sender and
# redelivers after a short backoff, at most this many times.
MAX_REDELIVERIES = 100
ZERO = Decimal(0)


class LambdaContext:
    """What the Lambda runtime passes as `context`, as far as Powertools reads it: it sets the
    in-progress record's expiry from the remaining time (a 30 s function timeout here). One
    shared, constant instance: IdempotencyConfig keeps the last registered context on itself, and
    every thread registers this same one."""

    function_name = "payment-webhook-peer"
    memory_limit_in_mb = 256
    aws_request_id = "peer"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class BadSignature(Exception):
    pass


class BenchFailure(Exception):
    pass


# ---------------------------------------------------------------- DynamoDB call counting


class CallCounter:
    """Counts every HTTP request a DynamoDB client sends (`before-send` fires once per attempt,
    so SDK retries count), per operation and per client, and per thread for the current
    delivery."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counting = False
        self.total = 0
        self.by_op: Counter[str] = Counter()
        self.by_client: Counter[str] = Counter()
        self.setup_by_client: Counter[str] = Counter()
        self.local = threading.local()

    def instrument(self, client, tag: str) -> None:
        client.meta.events.register("before-send.dynamodb", functools.partial(self._on_send, tag=tag))

    def _on_send(self, tag: str, event_name: str = "", **_kwargs):
        op = event_name.rsplit(".", 1)[-1]
        with self._lock:
            if self.counting:
                self.total += 1
                self.by_op[f"{tag}:{op}"] += 1
                self.by_client[tag] += 1
            else:
                self.setup_by_client[tag] += 1
        self.local.calls = getattr(self.local, "calls", 0) + 1
        return None  # a non-None answer would replace the HTTP request

    def thread_calls(self) -> int:
        return getattr(self.local, "calls", 0)

    def reset_thread(self) -> None:
        self.local.calls = 0


# ---------------------------------------------------------------- the handler's pieces


def secret_key(secret: str) -> bytes:
    if not secret.startswith("whsec_"):
        raise BenchFailure("the workload's secret does not start with whsec_")
    return base64.b64decode(secret[len("whsec_") :])


def verify(key: bytes, headers: dict, body: str) -> None:
    """Standard Webhooks: HMAC-SHA256 over `{id}.{timestamp}.{body}`, any `v1,` entry may match."""
    try:
        wid = headers["webhook-id"]
        ts = headers["webhook-timestamp"]
        sigs = headers["webhook-signature"]
    except KeyError as exc:
        raise BadSignature(f"missing header {exc}") from None
    try:
        stamp = int(ts)
    except ValueError:
        raise BadSignature("bad timestamp") from None
    if abs(FIXED_NOW - stamp) > TOLERANCE_S:
        raise BadSignature("timestamp outside tolerance")
    mac = hmac.new(key, f"{wid}.{ts}.{body}".encode(), hashlib.sha256).digest()
    expected = base64.b64encode(mac)
    for entry in sigs.split(" "):
        version, _, sig = entry.partition(",")
        if version == "v1" and hmac.compare_digest(expected, sig.encode()):
            return
    raise BadSignature("no matching v1 signature")


def display(amount: Decimal) -> str:
    """Money as the Rust side shows it: at least two fraction digits."""
    shown = amount.normalize()
    if -shown.as_tuple().exponent < 2:
        shown = shown.quantize(Decimal("0.01"))
    return str(shown)


def iso(stamp: int) -> str:
    at = dt.datetime.fromtimestamp(stamp, tz=dt.timezone.utc)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def key(pk: str) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": "item"}}


def backoff(attempt: int) -> float:
    cap = min(5 * (1 << min(attempt, 6)), 200)
    return (cap / 2 + random.random() * cap / 2) / 1000


def decide(invoice: dict | None, amount: Decimal, currency: str | None):
    """What the payment applies, and the invoice's new state (None: the invoice does not move)."""
    if invoice is None or (currency is not None and invoice["currency"]["S"] != currency):
        return ZERO, None
    gross = Decimal(invoice["gross"]["N"])
    paid = Decimal(invoice["paid"]["N"])
    applied = max(ZERO, min(amount, gross - paid))
    if applied <= ZERO:
        return ZERO, None
    new_paid = paid + applied
    status = "paid" if new_paid >= gross else "partially_paid"
    return applied, (new_paid, status, int(invoice["version"]["N"]))


def make_handler(ddb, table: str, org: str, integration: str, key_bytes: bytes, persistence, config, stats):
    def handler(event, context):
        headers = event["headers"]
        body = event["body"]
        verify(key_bytes, headers, body)
        data = json.loads(body)["data"]
        payment_id = data["payment_id"]
        invoice_id = data.get("invoice_id")
        amount = Decimal(data["amount"])
        currency = data.get("currency")
        payment_pk = f"ORG#{org}#PAYMENT#{integration}#{payment_id}"
        invoice_pk = f"ORG#{org}#INVOICE#{invoice_id}" if invoice_id else None
        at = iso(int(headers["webhook-timestamp"]))
        for attempt in range(MAX_ATTEMPTS):
            invoice = None
            if invoice_pk:
                invoice = ddb.get_item(TableName=table, Key=key(invoice_pk), ConsistentRead=True).get("Item")
            applied, change = decide(invoice, amount, currency)
            items = [
                {
                    "Put": {
                        "TableName": table,
                        "Item": {
                            **key(payment_pk),
                            "kind": {"S": "payment"},
                            "org": {"S": org},
                            "applied": {"N": display(applied)},
                            "at": {"S": at},
                        },
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            ]
            if change is not None:
                new_paid, status, version = change
                items.append(
                    {
                        "Update": {
                            "TableName": table,
                            "Key": key(invoice_pk),
                            "UpdateExpression": "SET paid = :p, version = :v2, #s = :status",
                            "ConditionExpression": "version = :v",
                            "ExpressionAttributeNames": {"#s": "status"},
                            "ExpressionAttributeValues": {
                                ":p": {"N": display(new_paid)},
                                ":v2": {"N": str(version + 1)},
                                ":status": {"S": status},
                                ":v": {"N": str(version)},
                            },
                        }
                    }
                )
            try:
                ddb.transact_write_items(TransactItems=items)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                    raise
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if reasons and reasons[0] == "ConditionalCheckFailed":
                    # The payment is already stored: Powertools let a repeat through (not expected
                    # here). Answer from what is stored; it is not counted as a booking.
                    stored = ddb.get_item(TableName=table, Key=key(payment_pk), ConsistentRead=True)["Item"]
                    stats.note_stored_repeat()
                    return {
                        "statusCode": 200,
                        "body": json.dumps({"duplicate": False, "applied": stored["applied"]["N"]}),
                    }
                # The invoice moved under us (version) or a transaction conflict: re-read, retry.
                stats.note_contention()
                time.sleep(backoff(attempt))
                continue
            stats.note_booked()
            return {"statusCode": 200, "body": json.dumps({"duplicate": False, "applied": display(applied)})}
        raise BenchFailure(f"invoice {invoice_id} stayed contended for {MAX_ATTEMPTS} attempts")

    decorated = idempotent(persistence_store=persistence, config=config)(handler)
    # Configure the shared persistence layer once, up front: its first-call configure() is not
    # safe to race from several threads.
    persistence.configure(config=config, function_name=f"{handler.__module__}.{handler.__qualname__}")
    return decorated


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.booked = 0
        self.contention = 0
        self.stored_repeats = 0
        self.local = threading.local()

    def note_booked(self) -> None:
        with self._lock:
            self.booked += 1
        self.local.ran = True

    def note_contention(self) -> None:
        with self._lock:
            self.contention += 1

    def note_stored_repeat(self) -> None:
        with self._lock:
            self.stored_repeats += 1
        self.local.ran = True


# ---------------------------------------------------------------- setup and checks


def batch_get(ddb, table: str, pks: list[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for i in range(0, len(pks), 100):
        request = {table: {"Keys": [key(pk) for pk in pks[i : i + 100]], "ConsistentRead": True}}
        while request:
            out = ddb.batch_get_item(RequestItems=request)
            for item in out["Responses"].get(table, []):
                found[item["pk"]["S"]] = item
            request = out.get("UnprocessedKeys") or None
    return found


def create_idempotency_table(ddb, name: str) -> None:
    try:
        ddb.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceInUseException":
            raise BenchFailure(f"idempotency table {name} already exists; give a fresh name") from None
        raise
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 300})
    for _ in range(300):
        if ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE":
            return
        time.sleep(0.2)
    raise BenchFailure(f"idempotency table {name} did not become ACTIVE")


def percentile(sorted_ms: list[float], q: float) -> float:
    """Nearest rank."""
    rank = max(1, math.ceil(q * len(sorted_ms)))
    return sorted_ms[rank - 1]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", required=True, help="DynamoDB endpoint, e.g. http://127.0.0.1:4590")
    p.add_argument("--table", required=True, help="main table (exists, seeded)")
    p.add_argument("--idempotency-table", required=True, help="created here; must not exist yet")
    p.add_argument("--workload", required=True, help="workload JSON file")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument(
        "--integration",
        default=None,
        help="integration id in payment keys (default: the workload's 'integration', else 'standard')",
    )
    args = p.parse_args(argv)
    if args.concurrency < 1:
        p.error("--concurrency must be at least 1")
    return args


def run(args) -> dict:
    with open(args.workload, encoding="utf-8") as f:
        workload = json.load(f)
    key_bytes = secret_key(workload["secret"])
    org = workload["org"]
    integration = args.integration or workload.get("integration") or "standard"
    deliveries = workload["deliveries"]
    n = len(deliveries)
    if n == 0:
        raise BenchFailure("the workload has no deliveries")

    session = boto3.session.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )
    boto_config = Config(max_pool_connections=args.concurrency * 2)
    app_ddb = session.client("dynamodb", endpoint_url=args.endpoint, config=boto_config)
    # Powertools' own client, from the same session and config, pointed at the emulator.
    idem_ddb = session.client("dynamodb", endpoint_url=args.endpoint, config=boto_config)
    counter = CallCounter()
    counter.instrument(app_ddb, "app")
    counter.instrument(idem_ddb, "idempotency")

    create_idempotency_table(app_ddb, args.idempotency_table)
    persistence = DynamoDBPersistenceLayer(table_name=args.idempotency_table, boto3_client=idem_ddb)
    config = IdempotencyConfig(
        event_key_jmespath='headers."webhook-id"',
        raise_on_no_idempotency_key=True,
        use_local_cache=False,
    )
    stats = Stats()
    handler = make_handler(app_ddb, args.table, org, integration, key_bytes, persistence, config, stats)

    # What each distinct webhook is about, and the invoices as they stand before the run.
    firsts: dict[str, dict] = {}
    for d in deliveries:
        firsts.setdefault(d["headers"]["webhook-id"], json.loads(d["body"])["data"])
    invoice_pks = sorted({f"ORG#{org}#INVOICE#{x['invoice_id']}" for x in firsts.values() if x.get("invoice_id")})
    before = batch_get(app_ddb, args.table, invoice_pks)
    # Warm both clients (endpoint, credentials, connection) outside the timed run.
    app_ddb.describe_table(TableName=args.table)
    persistence.client.describe_table(TableName=args.idempotency_table)
    if not (counter.setup_by_client["app"] and counter.setup_by_client["idempotency"]):
        raise BenchFailure(f"call counting is not wired to both clients: {dict(counter.setup_by_client)}")

    responses: list = [None] * n
    latencies: list = [None] * n
    calls: list = [None] * n  # (ran the handler body, calls of the answering handler call)
    failures: list[str] = []
    redeliveries = 0
    wasted_calls = 0
    next_index = 0
    lock = threading.Lock()
    context = LambdaContext()

    def worker() -> None:
        nonlocal next_index, redeliveries, wasted_calls
        while True:
            with lock:
                if failures or next_index >= n:
                    return
                i = next_index
                next_index += 1
            d = deliveries[i]
            for attempt in range(MAX_REDELIVERIES + 1):
                event = {"headers": dict(d["headers"]), "body": d["body"]}
                counter.reset_thread()
                stats.local.ran = False
                t0 = time.perf_counter()
                try:
                    answer = handler(event, context)
                except IdempotencyAlreadyInProgressError:
                    with lock:
                        redeliveries += 1
                        wasted_calls += counter.thread_calls()
                    time.sleep(backoff(attempt))
                    continue
                except Exception as exc:  # noqa: BLE001 - any failure fails the bench
                    with lock:
                        failures.append(f"delivery {i} ({d['headers'].get('webhook-id')}): {exc!r}")
                    return
                latencies[i] = (time.perf_counter() - t0) * 1000
                responses[i] = answer
                calls[i] = (stats.local.ran, counter.thread_calls())
                break
            else:
                with lock:
                    failures.append(f"delivery {i}: still in progress after {MAX_REDELIVERIES} redeliveries")
                return

    threads = [threading.Thread(target=worker, name=f"w{k}") for k in range(args.concurrency)]
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    counter.counting = True
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    counter.counting = False
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)

    if failures:
        raise BenchFailure("; ".join(failures[:5]) + (f" (+{len(failures) - 5} more)" if len(failures) > 5 else ""))

    # ---- checks (outside the timed run, not counted)
    problems: list[str] = []
    answers: dict[str, str] = {}
    for d, answer in zip(deliveries, responses):
        wid = d["headers"]["webhook-id"]
        if not isinstance(answer, dict) or answer.get("statusCode") != 200:
            problems.append(f"{wid}: answered {answer!r}")
            continue
        if answers.setdefault(wid, answer["body"]) != answer["body"]:
            problems.append(f"{wid}: a repeat was answered {answer['body']} after {answers[wid]}")
    booked = stats.booked
    duplicates = n - booked
    if booked != len(firsts):
        problems.append(f"booked {booked} times for {len(firsts)} distinct webhook-ids")
    if stats.stored_repeats:
        problems.append(f"{stats.stored_repeats} deliveries got past Powertools to an already stored payment")
    payment_pks = {wid: f"ORG#{org}#PAYMENT#{integration}#{x['payment_id']}" for wid, x in firsts.items()}
    stored = batch_get(app_ddb, args.table, sorted(set(payment_pks.values())))
    applied_by_invoice: dict[str, Decimal] = defaultdict(Decimal)
    for wid, x in firsts.items():
        item = stored.get(payment_pks[wid])
        if item is None:
            problems.append(f"{wid}: no payment item {payment_pks[wid]}")
            continue
        if wid in answers:
            said = Decimal(json.loads(answers[wid])["applied"])
            if Decimal(item["applied"]["N"]) != said:
                problems.append(f"{wid}: stored applied {item['applied']['N']}, answered {said}")
        if x.get("invoice_id"):
            applied_by_invoice[f"ORG#{org}#INVOICE#{x['invoice_id']}"] += Decimal(item["applied"]["N"])
    after = batch_get(app_ddb, args.table, invoice_pks)
    for pk in invoice_pks:
        if pk not in before:
            continue
        was, now = before[pk], after[pk]
        want = Decimal(was["paid"]["N"]) + applied_by_invoice[pk]
        paid, gross = Decimal(now["paid"]["N"]), Decimal(now["gross"]["N"])
        if paid != want or paid > gross:
            problems.append(f"{pk}: paid {paid}, expected {want} (gross {gross})")
        status = "paid" if paid >= gross else ("partially_paid" if paid > 0 else "open")
        if now["status"]["S"] != status:
            problems.append(f"{pk}: status {now['status']['S']} with paid {paid} of {gross}")
    if problems:
        raise BenchFailure("; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""))

    ms = sorted(latencies)
    first_calls = Counter(c for ran, c in calls if ran)
    repeat_calls = Counter(c for ran, c in calls if not ran)
    print(
        "peer diagnostics: "
        + json.dumps(
            {
                "calls_by_op": dict(sorted(counter.by_op.items())),
                "calls_by_client": dict(counter.by_client),
                "calls_per_first_delivery": {str(k): v for k, v in sorted(first_calls.items())},
                "calls_per_repeat_delivery": {str(k): v for k, v in sorted(repeat_calls.items())},
                "in_progress_redeliveries": redeliveries,
                "calls_of_redelivered_attempts": wasted_calls,
                "invoice_contention_retries": stats.contention,
            }
        ),
        file=sys.stderr,
    )
    ddb_calls = counter.total
    return {
        "events": n,
        "seconds": round(seconds, 6),
        "events_per_s": round(n / seconds, 3),
        "median_ms": round(percentile(ms, 0.5), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "ddb_calls": ddb_calls,
        "calls_per_event": round(ddb_calls / n, 4),
        "cpu_s": round(cpu_s, 4),
        "cpu_ms_per_event": round(cpu_s * 1000 / n, 4),
        "booked": booked,
        "duplicates": duplicates,
        "in_progress_retries": redeliveries,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except (BenchFailure, ClientError, OSError, KeyError, ValueError, binascii.Error) as exc:
        print(f"peer bench failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
