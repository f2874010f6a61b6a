"""How a commit lands: the one commit loop, its committers, and what runs after a commit.

:mod:`.loop` is the loop every path uses (prepare, catch up with winners, attempt, result);
:mod:`.committer` is the seam between what a commit holds and how it lands (put-if-absent
of ``_delta_log/<v>.json``, or a coordinator record: :mod:`txsql.txn.multitable`);
:mod:`.after_commit` is the one function every landed commit runs; :mod:`.own_files`
decides which written files a commit needs and which may be deleted;
:mod:`.read_validation` re-checks tables a Serializable transaction read but did not write.
"""
