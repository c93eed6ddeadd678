"""The stand-in server for the TARGET=uri tests: enginebench.standin (`make bench` starts it too)."""
from enginebench.standin import JAR, REPO, java, missing, standin_server  # noqa: F401
