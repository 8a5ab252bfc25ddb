"""Custom behaviour of the document drive (copied into servers/docs_drive/ by the factory)."""

from envfarm.servers.runtime.database import Database


def shared_with_me(db: Database, role: str | None = None) -> dict:
    email = str(db.principal)
    """Active documents the person can open without owning them, with their role on each."""
    rows = db.all(
        "SELECT d.*, p.role AS shared_role FROM documents d JOIN permissions p ON p.doc_id = d.doc_id"
        " WHERE p.email = ? AND p.role != 'owner' AND d.status = 'active' AND (? IS NULL OR p.role = ?)"
        " ORDER BY d.rowid",
        (email, role, role),
    )
    roles = {row["doc_id"]: row.pop("shared_role") for row in rows}
    return {"email": email, "documents": rows, "roles": roles}


def _save_version(db: Database, doc_id: str, number: int, content: str, author: str, summary: str) -> None:
    db.insert(
        "versions",
        {
            "version_id": db.next_id("versions"),
            "doc_id": doc_id,
            "number": number,
            "content": content,
            "author_email": author,
            "summary": summary,
            "created_at": db.now,
        },
    )


def create_document(db: Database, title: str, folder_id: str, kind: str = "document", content: str = "") -> dict:
    """The document, its owner permission (the signed-in user) and its first version, written together."""
    owner_email = str(db.principal)
    doc_id = db.next_id("documents")
    db.insert(
        "documents",
        {
            "doc_id": doc_id,
            "title": title.strip(),
            "kind": kind,
            "folder_id": folder_id,
            "owner_email": owner_email,
            "content": content,
            "version": 1,
            "status": "active",
            "created_at": db.now,
            "updated_at": db.now,
            "last_edited_by": owner_email,
            "department": db.scalar("SELECT department FROM folders WHERE folder_id = ?", (folder_id,)),
        },
    )
    db.insert(
        "permissions",
        {
            "permission_id": db.next_id("permissions"),
            "doc_id": doc_id,
            "email": owner_email,
            "role": "owner",
            "granted_by": owner_email,
            "granted_at": db.now,
        },
    )
    _save_version(db, doc_id, 1, content, owner_email, "Created")
    return db.require("documents", doc_id)


def edit_document(db: Database, doc_id: str, content: str, summary: str = "Edited") -> dict:
    editor_email = str(db.principal)
    """New text becomes the next version; the document records who changed it and when."""
    number = db.scalar("SELECT version FROM documents WHERE doc_id = ?", (doc_id,)) + 1
    db.execute(
        "UPDATE documents SET content = ?, version = ?, updated_at = ?, last_edited_by = ? WHERE doc_id = ?",
        (content, number, db.now, editor_email, doc_id),
    )
    _save_version(db, doc_id, number, content, editor_email, summary)
    return db.require("documents", doc_id)


def move_document(db: Database, doc_id: str, folder_id: str) -> dict:
    """The document changes folder and takes the new folder's department."""
    db.execute(
        "UPDATE documents SET folder_id = ?, department = (SELECT department FROM folders WHERE folder_id = ?)"
        " WHERE doc_id = ?",
        (folder_id, folder_id, doc_id),
    )
    return db.require("documents", doc_id)


def share_documents(db: Database, doc_ids: list[str], emails: list[str], role: str) -> dict:
    """Every document with every person, all or nothing: each document is checked before anything is
    granted, and a person who already has access to a document keeps their role."""
    me = str(db.principal)
    documents = list(dict.fromkeys(doc_ids))
    people = list(dict.fromkeys(emails))
    for doc_id in documents:
        document = db.require("documents", doc_id)
        if document["status"] == "trashed":
            db.reject(f"Document {doc_id} is in the trash and can't be shared; restore it first. Nothing was shared.")
        if not db.one(
            "SELECT 1 FROM permissions WHERE doc_id = ? AND email = ? AND role IN ('editor', 'owner')", (doc_id, me)
        ):
            db.reject(
                f"You can't share document {doc_id}: only its owner and editors can share it. Nothing was shared."
            )
    granted, skipped = [], []
    for doc_id in documents:
        for email in people:
            if db.one("SELECT 1 FROM permissions WHERE doc_id = ? AND email = ?", (doc_id, email)):
                skipped.append(f"{email} on {doc_id}")
                continue
            granted.append(
                db.insert(
                    "permissions",
                    {
                        "permission_id": db.next_id("permissions"),
                        "doc_id": doc_id,
                        "email": email,
                        "role": role,
                        "granted_by": me,
                        "granted_at": db.now,
                    },
                )
            )
    return {"shared": len(granted), "permissions": granted, "skipped": skipped}
