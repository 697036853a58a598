"""A pipeline whose declaration changed: what the change means against the checkpoint and
table it already has.

plan.py      the plan: the run resumes, or every file must be read again (`python -m jobs plan`)
rebuild.py   every file read again into a new build, the switch to it, and back (`python -m jobs rebuild`)
compare_builds.py  the new build's use of the rows against the build in use's, at the switch
"""
