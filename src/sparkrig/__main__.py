"""`python -m sparkrig`: the same CLI as the `sparkrig` script, where no script was installed
(a source tree on PYTHONPATH, as on the GPU test bed)."""

from sparkrig.cli import main

main()
