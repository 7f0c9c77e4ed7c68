"""The scripts here start their own processes and import optional frameworks: pytest runs them, never imports them.

``--doctest-modules`` would otherwise import each one at collection, pulling in
Lightning or Ignite (absent where they are not installed) and their
module-level warning filters into the test process.
"""

collect_ignore = ["lightning_ddp.py", "ignite_gloo.py"]
