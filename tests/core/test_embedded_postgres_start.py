"""The embedded PostgreSQL server's first start from several processes at once (two
pytest-xdist workers on a fresh clone, or the demo's web process and worker): every process
gets the one server, and the cluster is initialised once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from beamweaver_core.embedded_postgres import _running_socket_dir, stop_server

START = (
    "import sys; from pathlib import Path; "
    "from beamweaver_core.embedded_postgres import ensure_server; "
    "print(ensure_server(Path(sys.argv[1])))"
)


def test_several_processes_starting_a_fresh_cluster_share_one_server(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", START, str(pgdata)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        results = [process.communicate(timeout=120) for process in starters]
        assert [process.returncode for process in starters] == [0, 0, 0], [
            err for _, err in results
        ]
        socket_dirs = {out.strip().splitlines()[-1] for out, _ in results}
        assert len(socket_dirs) == 1
        assert (pgdata / "PG_VERSION").exists()
    finally:
        stop_server(pgdata)
    assert not stop_server(pgdata)  # it was one server, and it is stopped


def test_a_half_written_pid_file_reads_as_not_ready(tmp_path: Path) -> None:
    # What CI read while another process was starting the server: seven of the eight lines
    # of postmaster.pid, before the socket directory was filled in and `ready` written.
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    pid_file = pgdata / "postmaster.pid"
    for text in (
        f"{os.getpid()}\n{pgdata}\n1796211139\n5432\n\n\n  2334752     32789\n",
        f"{os.getpid()}\n{pgdata}\n",
        "",
    ):
        pid_file.write_text(text)
        assert _running_socket_dir(pgdata) is None
