"""`apache-advisor fix`: apply the mechanical edits that lint findings carry.

The data flow stays one way: lint produces findings with an `Edit`
(advisor.lint.edits); this package plans the edits (`plan`), splices them
into each file's bytes (`splice`), has httpd check a copy of the changed
tree (`check`) and only then replaces the files (`write`).
"""
