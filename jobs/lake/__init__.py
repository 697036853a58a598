"""Where things live: the layout of a root, one filesystem interface (local and S3), locks,
atomic landing. No Spark.

    layout.py   locations under a root; local paths and s3a:// URIs
    builds.py   which build of a pipeline is in use (after a rebuild's switch): its locations
    pointer.py  a _CURRENT.json: which version is current (a published backfill's, a build), one format
    fs.py       read, write, remove (pyarrow.fs)
    listings.py what a folder holds: the one listing, a landing's regular files only (Spark lists alike)
    gzip_size.py  how large a gzip file is once decompressed (its trailer's estimate; every member's)
    delta.py    Delta tables: Spark's settings for them, what their transaction log says
    delta_source.py  what Delta's streaming source read of a table (a reader's batches), from its offsets
    s3.py       S3 clients, Spark's s3a settings, S3 errors in one line
    locks.py    one writer of a pipeline's table at a time (a flock; lease.py: a lease in a bucket;
                holders.py: the lock interface, who holds it, and how a writer waits)
    landing.py  landing files atomically, as producers must
    faults.py   the root cause of a storage error, in words a user can act on
"""
