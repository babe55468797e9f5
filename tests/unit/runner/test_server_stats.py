"""Parsing the server's INFO sections into the repetition's ``server`` evidence."""

from __future__ import annotations

from vkbench.runner.server_stats import Window, end, parse_commandstats, parse_latencystats
from vkbench.topology.readiness import parse_fields

COMMANDSTATS = """# Commandstats
cmdstat_set:calls=30000,usec=22927,usec_per_call=0.76,rejected_calls=0,failed_calls=0
cmdstat_config|get:calls=6,usec=37,usec_per_call=6.17,rejected_calls=0,failed_calls=0
cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0
"""
LATENCYSTATS = """# Latencystats
latency_percentiles_usec_set:p50=1.003,p99=6.015,p99.9=23.039
latency_percentiles_usec_info:p50=30.1,p99=40.2,p99.9=40.2
"""


def test_parse_commandstats_and_latencystats():
    stats = parse_commandstats(parse_fields(COMMANDSTATS))
    assert stats["SET"] == {"calls": 30000, "usec": 22927, "usec_per_call": 0.76, "rejected_calls": 0, "failed_calls": 0}
    assert "CONFIG|GET" in stats
    latency = parse_latencystats(parse_fields(LATENCYSTATS))
    assert latency["SET"] == {"p50": 1.003, "p99": 6.015, "p99.9": 23.039}


class FakeNode:
    """Answers INFO like a server whose counters moved during the window."""

    def __init__(self, sections: dict[str, str], *, latency: bool = True):
        self.sections = sections
        self.latency = latency

    def execute_command(self, *args):
        assert args[0] == "INFO"
        if args[1] == "latencystats" and not self.latency:
            raise RuntimeError("ERR unknown section")
        return self.sections[args[1]]

    def close(self):
        pass


def test_window_sums_primaries_and_keeps_the_worst_percentile():
    nodes = [
        FakeNode({"cpu": "used_cpu_sys:1.5\nused_cpu_user:2.5\n", "commandstats": COMMANDSTATS, "latencystats": LATENCYSTATS}),
        FakeNode({"cpu": "used_cpu_sys:0.5\nused_cpu_user:0.5\n", "commandstats": COMMANDSTATS,
                  "latencystats": LATENCYSTATS.replace("p99=6.015", "p99=9.5")}),
    ]
    window = Window(clients=nodes, cpu_before=[{"used_cpu_sys": 1.0, "used_cpu_user": 1.5}, {}],
                    commands_before=[{"SET": {"calls": 10000, "usec": 2927}}, {}], reset=True, started=0.0)
    out = end(window, elapsed_s=2.0)
    assert out["primaries"] == 2
    assert out["commands"]["SET"]["calls"] == 50000 and out["commands"]["SET"]["usec"] == 42927
    assert out["commands"]["SET"]["usec_per_call"] == round(42927 / 50000, 3)
    assert "INFO" not in out["commands"]   # vkbench's own probes are not the workload
    assert out["cpu"]["cores"] == round((0.5 + 1.0 + 0.5 + 0.5) / 2.0, 3)
    assert out["latency_usec"]["SET"]["p99"] == 9.5 and "INFO" not in out["latency_usec"]


def test_a_server_without_latencystats_or_unreadable_is_recorded_not_fatal():
    node = FakeNode({"cpu": "used_cpu_sys:1\nused_cpu_user:1\n", "commandstats": COMMANDSTATS}, latency=False)
    out = end(Window(clients=[node], cpu_before=[{}], commands_before=[{}], reset=True), elapsed_s=1.0)
    assert out["latency_usec"] is None and out["commands"]["SET"]["calls"] == 30000
    assert end(Window(error="ConnectionError: refused"))["error"].startswith("ConnectionError")
