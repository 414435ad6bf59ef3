"""jsstore restore into a three-node nats-server cluster (routes on loopback): a backup made
from a jsstore store directory is restored with --replicas 3; every message is read through
each node, and after the cluster stops, from each node's own store directory."""

from __future__ import annotations

import json
import time

import pytest
from natsserver import free_port, require_nats_server, start_nats_server

import jsstore
from jsstore.cli import main

pytestmark = pytest.mark.natsserver


def ok(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def wait_for(capsys, what, *argv, deadline: float = 60.0) -> str:
    """The output of the first run of `argv` that succeeds and satisfies `what` (a cluster
    elects its leaders in its own time)."""
    end = time.monotonic() + deadline
    while True:
        code = main(list(argv))
        out, err = capsys.readouterr()
        if code == 0 and what(out):
            return out
        if time.monotonic() > end:
            raise AssertionError(f"{argv}: {err or out}")
        time.sleep(0.2)


def test_restore_with_three_replicas(tmp_path, capsys):
    require_nats_server()
    store = str(tmp_path / "store")
    ok(capsys, "stream", "add", "ORDERS", "--subjects", "orders.>", "--store", store)
    for n in range(25):
        ok(capsys, "pub", f"orders.{n % 3}", f"order {n}", "--store", store)
    ok(capsys, "consumer", "add", "ORDERS", "C", "--store", store)
    ok(capsys, "consumer", "next", "ORDERS", "C", "--count", "4", "--store", store)
    with jsstore.open(store, timers=False) as js:
        expected = [(m.seq, m.subject, m.data) for m in
                    (js.get_msg("ORDERS", seq) for seq in range(1, 26))]
    backup = str(tmp_path / "orders.backup")
    ok(capsys, "backup", "--stream", "ORDERS", "--to", backup, "--store", store)

    ports = [free_port() for _ in range(3)]
    routes = ",".join(f"nats://127.0.0.1:{p}" for p in ports)
    nodes = []
    try:
        for i, port in enumerate(ports):
            nodes.append(start_nats_server(
                tmp_path / f"n{i}", ["-n", f"n{i}", "--cluster_name", "C", "--cluster",
                                     f"nats://127.0.0.1:{port}", "--routes", routes]))
        urls = [node.url for node in nodes]
        wait_for(capsys, lambda out: True, "stream", "ls", "--server", urls[0])
        out = ok(capsys, "restore", backup, "--replicas", "3", "--server", urls[0],
                 "--timeout", "20")
        assert out.startswith("Restored stream ORDERS: 25 messages")
        # (a cluster restores the consumers after the stream: their count may lag)
        wait_for(capsys, lambda out: out == "C\n", "consumer", "ls", "ORDERS", "--names",
                 "--server", urls[0])

        def all_current(out: str) -> bool:
            cluster = json.loads(out).get("cluster") or {}
            replicas = cluster.get("replicas") or []
            return len(replicas) == 2 and all(r.get("current") for r in replicas)
        info = json.loads(wait_for(capsys, all_current, "stream", "info", "ORDERS", "--json",
                                   "--server", urls[0]))
        assert info["config"]["num_replicas"] == 3 and info["state"]["messages"] == 25
        for url in urls:
            got = []
            for seq in range(1, 26):
                m = json.loads(ok(capsys, "stream", "get", "ORDERS", str(seq), "--json",
                                  "--server", url))["message"]
                got.append((m["seq"], m["subject"], m["data"]))
            assert [(s, subj) for s, subj, _ in got] == [(s, subj) for s, subj, _ in expected]
            consumer = json.loads(ok(capsys, "consumer", "info", "ORDERS", "C", "--json",
                                     "--server", url))
            assert consumer["ack_floor"]["stream_seq"] == 4
    finally:
        for node in nodes:
            node.stop()
    # each node's replica, read from its own directory: what a node has applied to its
    # store is exactly what was backed up; a follower may not have applied everything when
    # it stops (the rest waits in its raft log, applied when it starts again), so every
    # replica holds a leading run of the messages and at least one holds them all
    complete = 0
    for i in range(3):
        with jsstore.open(tmp_path / f"n{i}", timers=False) as js:
            last = js.stream_info("ORDERS").state.last_seq
            got = [(m.seq, m.subject, m.data) for m in
                   (js.get_msg("ORDERS", seq) for seq in range(1, last + 1))]
        assert got == expected[:last], f"node n{i}"
        complete += last == len(expected)
    assert complete >= 1
