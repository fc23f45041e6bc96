"""Collecting from nbgrader's exchange on a hub: a submission counts only when the account it names handed it in.

nbgrader names each submission in the exchange's inbound folder ``<student>+<assignment>+<time>+<random>``, and every
account may create folders there (that is how students hand in). Any student can therefore hand in a folder that
names another student, with a later time; nbgrader's own collector takes each student's latest folder and, on finding
that another account owns it, only warns (``check_owner``) and collects it anyway. This collector leaves such a
folder out, says whose account made it, and takes the student's latest folder of their own instead.
"""

import glob
import os
import pwd

from nbgrader.exchange.default.collect import ExchangeCollect


class OwnSubmissionsOnly(ExchangeCollect):
    """nbgrader's collect, where ``check_owner`` (on by default) leaves out a folder that another account made. Off,
    it collects as nbgrader does: for tests whose students are identities of one account."""

    def init_src(self) -> None:
        super().init_src()  # checks the course and the inbound folder, and picks each student's latest folder
        if not self.check_owner:
            return
        chosen = [self.own(record) for record in self.src_records]
        self.src_records = [record for record in chosen if record is not None]

    def own(self, latest: dict) -> dict | None:
        """``latest`` if its student's account made it, else that student's latest folder that their account made
        (by nbgrader's rule, the due date included), or None."""
        if self.made_by(latest) == latest["username"]:
            return latest
        pattern = os.path.join(self.inbound_path, f"{latest['username']}+{self.coursedir.assignment_id}+*")
        records = [self._path_to_record(path) for path in glob.glob(pattern)]
        forged = [record for record in records if self.made_by(record) != record["username"]]
        for record in forged:
            self.log.warning(
                "Not collected: %s names %s, but the account %s handed it in.",
                record["filename"],
                record["username"],
                self.made_by(record),
            )
        theirs = self._sort_by_timestamp([record for record in records if record not in forged])
        if not theirs:
            return None
        if self.duedate is not None and self.before_duedate:
            on_time = [record for record in theirs if record["timestamp"] <= self.duedate]
            return (on_time or theirs)[0]
        return theirs[0]

    def made_by(self, record: dict) -> str:
        """The account that made a submission's folder: of a symbolic link, the link's own (another student's link
        to an earlier folder of the student it names would otherwise pass for theirs)."""
        uid = os.lstat(os.path.join(self.inbound_path, record["filename"])).st_uid
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"uid {uid}"
