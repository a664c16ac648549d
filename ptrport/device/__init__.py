"""The device layer: backends (the torch device kinds a run targets), CPU memory presented at
upper-half addresses and the guard around it, Triton kernels on CPU tensors, allocations with
guard bands, address arithmetic on device columns, and the platform's fingerprint.

It knows torch and Triton, and nothing of checks, pytest or reports: it imports only the shared
leaves (:mod:`ptrport.errors`, :mod:`ptrport.addresses`, :mod:`ptrport.named`,
:mod:`ptrport.dtype_names`).
"""
