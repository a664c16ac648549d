"""The names the plugin's entry module and the run's roles share: the scenario marker, the
attributes a check's reports carry, where reports go. A leaf, so that no role imports the entry
module and the entry module imports nothing heavy to know them."""

MARKER = "ptrport_scenario"
"""The marker of every scenario module: its functions are parametrized and run as checks."""
REAL_MEMORY = "real_memory"
"""The marker's keyword for a scenario whose checks copy real allocations: only those run on
a backend that places allocations."""
USER_MARKER = "ptrport"
"""The marker of a user's own test: it runs once per backend of the run, in that backend's
scope (``@pytest.mark.ptrport``, ``@pytest.mark.ptrport(backends=[...])``)."""
BACKENDS_KEYWORD = "backends"
BACKEND_PARAM = "ptrport_backend"
"""What a user's marked test is parametrized over (a name of ours, so that a fixture of the
user's named ``backend`` stays theirs); also the plugin's fixture that refuses an unmarked
test."""
DEVICE_FIXTURE = "ptrport_device"
SCENARIOS_PACKAGE = "ptrport.scenarios"
RESULT_ATTRIBUTE = "ptrport_result"
"""The attribute of a teardown report that holds its check's result record."""
CHECK_ATTRIBUTE = "ptrport_check"
"""The attribute of each report of a scenario item that says which check it is (a dict)."""
REPORT_DIR_ENV = "PTRPORT_REPORT_DIR"
REPORT_DIR_OPTION = "--report-dir"
ROLE_REPORT = "ptrport-report"
ROLE_COLLECTION = "ptrport-collection"
ROLE_CHECKS = "ptrport-checks"
ROLE_ISOLATION = "ptrport-isolation"
ROLE_CHILD = "ptrport-child"
"""The names each role of a run is registered under with pytest's plugin manager (a forked
child unregisters the parent's and keeps the others)."""
WHOLE_SUITE_INI = "ptrport_all"
"""The ini key that asks for a whole-suite run, as ``--ptrport-all`` does."""
STAND_INS = ("cuda",)
"""The devices ``--ptrport-stand-in`` can stand in for on the CPU backends."""
