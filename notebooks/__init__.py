# Makes the notebooks' folder a package for pytest alone: its conftest.py is then imported as
# notebooks.conftest, not as a second top-level `conftest` that would shadow lib/tests/conftest.py
# (whose helpers the tests import by that name) in a process that collected the notebooks first.
