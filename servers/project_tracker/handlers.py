"""Custom behaviour of the project tracker (copied into servers/project_tracker/ by the factory)."""

from envfarm.servers.runtime.database import Database


def project_summary(db: Database, project_id: str) -> dict:
    """Task counts per status and the overdue tasks: an aggregate no single-table search can give."""
    project = db.require("projects", project_id)
    counts = dict.fromkeys(("todo", "in_progress", "review", "done"), 0)
    for row in db.all("SELECT status, count(*) AS n FROM tasks WHERE project_id = ? GROUP BY status", (project_id,)):
        counts[row["status"]] = row["n"]
    total = sum(counts.values())
    overdue = db.all(
        "SELECT * FROM tasks WHERE project_id = ? AND status != 'done' AND due_date IS NOT NULL"
        " AND due_date < date(?) ORDER BY due_date, rowid",
        (project_id, db.now),
    )
    return {
        "project_id": project_id,
        "name": project["name"],
        **counts,
        "percent_done": round(100.0 * counts["done"] / total, 1) if total else 0.0,
        "overdue_tasks": overdue,
    }


def roll_over_milestone(db: Database, from_milestone_id: str, to_milestone_id: str) -> dict:
    """Move the unfinished tasks (taking the target's due date), then close the source milestone."""
    due = db.scalar("SELECT due_date FROM milestones WHERE milestone_id = ?", (to_milestone_id,))
    moving = [
        row["task_id"]
        for row in db.all(
            "SELECT task_id FROM tasks WHERE milestone_id = ? AND status != 'done' ORDER BY rowid",
            (from_milestone_id,),
        )
    ]
    for task_id in moving:
        db.execute(
            "UPDATE tasks SET milestone_id = ?, due_date = ?, updated_at = ? WHERE task_id = ?",
            (to_milestone_id, due, db.now, task_id),
        )
    db.execute("UPDATE milestones SET status = 'closed' WHERE milestone_id = ?", (from_milestone_id,))
    tasks = [db.require("tasks", task_id) for task_id in moving]
    return {
        "closed_milestone_id": from_milestone_id,
        "target_milestone_id": to_milestone_id,
        "moved": len(moving),
        "tasks": tasks,
    }
