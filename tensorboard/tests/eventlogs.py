"""Real TensorBoard event files for the tests and the benchmark, and archives of them as Argo writes them.

Our Django app is called `tensorboard` too, so in this process `import tensorboard` is ours: the events are
written by a child Python whose path does not start at the repository (cwd elsewhere), with the writer and
scalar summaries of the PyPI `tensorboard` package (no TensorFlow needed).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

_WRITER = """
import json, sys, time
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.scalar import summary_v2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
for folder, steps in json.loads(sys.argv[1]):
    writer = EventFileWriter(folder)
    for step in range(steps):
        summary = summary_v2.scalar_pb("loss", 1.0 / (step + 1))
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
    writer.close()
"""


def write_event_logs(folders: list[Path], steps: int = 5) -> None:
    """A scalar `loss` over `steps` steps in each folder (created), written by the PyPI tensorboard."""
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    spec = json.dumps([[str(folder), steps] for folder in folders])
    subprocess.run([sys.executable, "-c", _WRITER, spec], cwd=folders[0].parent, check=True, timeout=120)


def tgz_of(folder: Path, root_name: str = "logs", *, gzip: bool = True) -> bytes:
    """The folder as Argo archives an output artifact by default: a tar.gz whose entries start with the
    artifact's base name (`logs/events.out…`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gzip else "w") as archive:
        archive.add(folder, arcname=root_name)
    return buffer.getvalue()


def zip_of(folder: Path, root_name: str = "logs") -> bytes:
    """The folder as Argo archives it with `archive: {zip: {}}`, entries under the artifact's base name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, f"{root_name}/{path.relative_to(folder).as_posix()}")
    return buffer.getvalue()
