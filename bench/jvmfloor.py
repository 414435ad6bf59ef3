"""The JVM reader's floor for bench/spark.py: bench/java (FloorSource) compiled against the
reader's jar into a jar of its own, which the bench's session loads beside the reader's."""

from __future__ import annotations

import os
import tempfile
import zipfile

from jvminspect import driver_classpath

JAVA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")
FLOOR_FORMAT = "jsstore.spark.FloorSource"      # found by class name: no service entry


def floor_jar(reader_jar: str, out_dir: str) -> str:
    """Build the floor's jar in out_dir; its path."""
    path = os.path.join(out_dir, "jsstore-spark-floor.jar")
    with tempfile.TemporaryDirectory(prefix="jsstore-floor-") as classes:
        driver_classpath(reader_jar, classes, JAVA_DIR)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for root, _dirs, names in os.walk(classes):
                for name in sorted(names):
                    full = os.path.join(root, name)
                    jar.write(full, os.path.relpath(full, classes))
    return path
