"""The report's pipelined section (bench/driver/report/pipelined.py): knit-server's rows of mode
"pipelined" (wrk, 16 pipelined GET /plaintext) beside the nginx peer's, their ratios paired by
repetition, and the rest of the report left as it was. Run by ctest: python3 this file."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "driver", "report"))

from configs import group_configs, normalize_row  # noqa: E402
from report import render_markdown  # noqa: E402

WRK = ["/usr/bin/wrk", "-t", "1", "-c", "50", "-d", "8s", "-s", "b/wrk_pipeline.lua",
       "http://127.0.0.1:3000/plaintext", "--", "16"]


def pipelined_row(tag, server_mode, rep, rps, cores, syscalls, slowest):
    return normalize_row({
        "tag": tag, "mode": "pipelined", "server_mode": server_mode, "rep": rep,
        "idle_cores": 0, "total_rps": int(rps), "cores": cores, "load_cmd": WRK,
        "routes": {"plaintext": {"rps": rps, "p50": 0, "p99": 0, "max": slowest, "ok": 1.0}},
        "cpu": {"syscalls_per_req": syscalls}})


def rows():
    # knit: 400k and 420k responses/s at 0.8 cores (2.0 and 1.905 CPU-us each); nginx: 500k
    # and 350k at 0.9 cores (1.8 and 2.571). Paired by repetition: responses/s 0.8x and 1.2x.
    return [pipelined_row("inline", "inline", 0, 400000, 0.8, 0.25, 3.0),
            pipelined_row("nginx", "peer:nginx", 0, 500000, 0.9, 0.125, 2.0),
            pipelined_row("inline", "inline", 1, 420000, 0.8, 0.5, 3.2),
            pipelined_row("nginx", "peer:nginx", 1, 350000, 0.9, 0.25, 2.2)]


def section(md):
    a = md.find("## Pipelined: TechEmpower plaintext")
    return "" if a < 0 else md[a:]


class PipelinedReport(unittest.TestCase):
    def test_knit_beside_nginx_with_paired_ratios(self):
        md = render_markdown(rows())
        s = section(md)
        self.assertIn("wrk with 16 pipelined `GET /plaintext`", s)
        self.assertIn("| inline | 410000 (400000–420000) | 0.80 | 1.95 (1.90–2.00) | "
                      "0.375 (0.250–0.500) | 3.10 (3.00–3.20) | 1.00 |", s)
        self.assertIn("| peer: nginx | 425000 (350000–500000) | 0.90 | 2.19 (1.80–2.57) | "
                      "0.188 (0.125–0.250) | ", s)
        # rep 0: 400k / 500k = 0.80, rep 1: 420k / 350k = 1.20; CPU nginx / knit: 0.90, 1.35;
        # (the median 1.125 prints as 1.12); system calls nginx / knit: 0.5 and 0.5.
        self.assertIn("- `inline` vs `peer: nginx`: responses/s 1.00× (0.80–1.20), "
                      "CPU-us/response 1.12× (0.90–1.35), syscalls/response 0.50×", s)

    def test_pipelined_rows_stay_out_of_the_profile_tables(self):
        md = render_markdown(rows())
        self.assertNotIn("## Cost profile", md)
        self.assertEqual(len(group_configs(rows())), 2)

    def test_no_section_without_pipelined_rows(self):
        sat = normalize_row({"tag": "inline", "mode": "sat", "server_mode": "inline",
                             "idle_cores": 0, "total_rps": 10, "cores": 1,
                             "routes": {"ping": {"rps": 10, "p50": 1, "p99": 2}}})
        self.assertEqual(section(render_markdown([sat])), "")

    def test_an_unknown_mode_is_still_refused(self):
        with self.assertRaises(ValueError):
            normalize_row({"tag": "x", "mode": "piped", "idle_cores": 0, "total_rps": 0,
                           "cores": 0, "routes": {}})


if __name__ == "__main__":
    unittest.main()
