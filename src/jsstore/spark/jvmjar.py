"""The JVM reader's jar (`format("jsstore-jvm")`): compiled from the Java sources shipped in
this package, with `javac`, against the Spark jars pyspark bundles.

    spark = (SparkSession.builder.config("spark.jars", jvmjar.jar_path()) ... .getOrCreate())

The jar is built once per source version and kept in a cache directory
($JSSTORE_JAR_CACHE, else $XDG_CACHE_HOME/jsstore, else ~/.cache/jsstore); its name carries a
hash of the sources and of the Spark jars' names, so an edit or another pyspark rebuilds it.
`python -m jsstore.spark.jvmjar` builds it and prints its path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

JAVA_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")
SERVICES = "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
SOURCE_CLASS = "jsstore.spark.JsStoreSource"
JAVA_RELEASE = "17"


class JarBuildError(RuntimeError):
    """The jar could not be compiled (no JDK, no pyspark, or a compile error)."""


def spark_jars_dir() -> str:
    """The directory of Spark's jars: $SPARK_HOME/jars, else the ones pyspark bundles."""
    home = os.environ.get("SPARK_HOME")
    if home and os.path.isdir(os.path.join(home, "jars")):
        return os.path.join(home, "jars")
    try:
        import pyspark  # noqa: PLC0415 - only the jar build needs it
    except ImportError as exc:
        raise JarBuildError("pyspark is not installed: pip install 'jsstore[spark]'") from exc
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not os.path.isdir(jars):
        raise JarBuildError(f"pyspark has no jars directory ({jars}); set SPARK_HOME")
    return jars


def java_sources() -> list[str]:
    out = []
    for root, _dirs, names in os.walk(JAVA_ROOT):
        out.extend(os.path.join(root, n) for n in names if n.endswith(".java"))
    return sorted(out)


def sources_digest(jars_dir: str) -> str:
    digest = hashlib.sha256()
    for path in java_sources():
        digest.update(os.path.relpath(path, JAVA_ROOT).encode())
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update("\n".join(sorted(os.listdir(jars_dir))).encode())
    return digest.hexdigest()[:16]


def cache_dir() -> str:
    explicit = os.environ.get("JSSTORE_JAR_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jsstore")


def javac() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.isfile(os.path.join(home, "bin", "javac")):
        return os.path.join(home, "bin", "javac")
    found = shutil.which("javac")
    if found is None:
        raise JarBuildError("javac not found: the JVM reader needs a JDK 17+ "
                            "(Debian: apt-get install openjdk-17-jdk-headless)")
    return found


def build_jar(out_path: str, jars_dir: str) -> None:
    with tempfile.TemporaryDirectory(prefix="jsstore-jar-") as work:
        classes = os.path.join(work, "classes")
        os.mkdir(classes)
        command = [javac(), "--release", JAVA_RELEASE, "-nowarn", "-encoding", "UTF-8",
                   "-cp", os.path.join(jars_dir, "*"), "-d", classes, *java_sources()]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise JarBuildError("javac failed:\n" + done.stdout + done.stderr)
        partial = os.path.join(work, "out.jar")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            jar.writestr(SERVICES, SOURCE_CLASS + "\n")
            for root, _dirs, names in os.walk(classes):
                for name in sorted(names):
                    path = os.path.join(root, name)
                    jar.write(path, os.path.relpath(path, classes))
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        os.replace(partial, out_path)      # atomic: a concurrent builder sees a whole jar


def jar_path(build: bool = True) -> str:
    """The path of the jar for these sources, built first when it is not there yet."""
    jars_dir = spark_jars_dir()
    path = os.path.join(cache_dir(), f"jsstore-spark-{sources_digest(jars_dir)}.jar")
    if not os.path.isfile(path):
        if not build:
            raise JarBuildError(f"the jar is not built yet ({path})")
        build_jar(path, jars_dir)
    return path


if __name__ == "__main__":
    try:
        print(jar_path())
    except JarBuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
