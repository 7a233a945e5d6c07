"""Files that `evalyard plugin new NAME` renders into a new plugin project.

Placeholders: ``{{name}}`` (the plugin name, e.g. ``toxicity``), ``{{package}}``
(``evalyard_toxicity``), ``{{distribution}}`` (``evalyard-toxicity``),
``{{class_name}}`` (``Toxicity``). The folder ``package`` becomes ``{{package}}``.
"""
