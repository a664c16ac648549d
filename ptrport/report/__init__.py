"""The report layer: records in, text out. Results and platform reports as versioned JSON, the
compatibility matrix, regressions, nights kept, the page and the job summary, repro scripts,
known failures, benchmark measurements, the nightly matrix's platform kinds.

Reports are read where nothing but the standard library is installed, so it imports neither
torch, numpy, pytest, Hypothesis nor Triton, nor the layers that do (device, check, run): only
the shared leaves.
"""
