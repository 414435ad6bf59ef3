"""The JVM reader's test drivers (tests/java: FormatsInspect, ColumnsInspect), compiled
against the reader's jar and run beside it; they stay out of the jar users get.  The bench's
Java (bench/java) is compiled the same way."""

from __future__ import annotations

import os
import subprocess

from jsstore.spark import jvmjar

JAVA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")


def java_binary() -> str:
    """The `java` of the JDK whose javac builds the jar."""
    return os.path.join(os.path.dirname(jvmjar.javac()), "java")


def driver_classpath(jar: str, out_dir: str, java_dir: str = JAVA_DIR) -> str:
    """Compile the drivers (the .java files under java_dir) into out_dir; the class path
    that runs them with the jar."""
    spark_jars = os.path.join(jvmjar.spark_jars_dir(), "*")
    sources = [os.path.join(root, name) for root, _dirs, names in os.walk(java_dir)
               for name in names if name.endswith(".java")]
    done = subprocess.run([jvmjar.javac(), "--release", jvmjar.JAVA_RELEASE, "-nowarn",
                           "-encoding", "UTF-8", "-cp", jar + os.pathsep + spark_jars,
                           "-d", out_dir, *sorted(sources)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"javac of {java_dir} failed:\n" + done.stdout + done.stderr)
    return os.pathsep.join([out_dir, jar, spark_jars])
