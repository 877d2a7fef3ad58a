"""Staging and running the GPU measurements on a bare, offline GPU machine (issue #18).

``stage.py`` runs here, on CPU: it gathers what the GPU machine lacks (wheels, the model, the data, the CPU
baselines and first-stage candidates) into loads small enough to carry. ``runner.py`` runs there: it receives the
loads, joins and checks them, installs the wheels and runs the measurements in resumable steps. ``parts.py`` splits
and joins files under a size cap, checked by sha256. docs/benchmarks.md ("GPU runs") gives the commands.
"""
