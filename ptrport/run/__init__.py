"""The run layer: checks run inside pytest (settings, session, collection, outcomes, crash
isolation, the run's report, the Hypothesis profiles) and outside it (the probe's and the
benchmarks' reports).

It imports the check, device and report layers and the shared leaves. :mod:`ptrport.run.names`
is its leaf: the names the plugin's entry module shares with it, so that nothing imports the
entry module.
"""
