"""The scenarios: the checks of :mod:`ptrport.check.checks`, each as a pytest test of its own,
marked ``ptrport_scenario`` so that the plugin parametrizes it over the run's backends and subjects.
They import the check layer (and the records of the uint64 probe); nothing imports them, pytest
collects them.

Run them from any directory with ``ptrport run`` (or ``pytest --pyargs ptrport.scenarios``).
"""
