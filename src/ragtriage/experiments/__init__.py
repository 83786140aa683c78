"""Experiments: many runs against one baseline on many measures, which configuration variable changed, where the
figures moved (slices, defect categories), and the HTML/Markdown report that publishes all of it.

Sits at the gate layer: it reads the layers below through ``ragtriage.gate.sources`` and shares the gate's
significance code.
"""
