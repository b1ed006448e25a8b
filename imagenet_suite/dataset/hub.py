"""Publish a verified dataset folder to the Hugging Face Hub and tag its version."""

from __future__ import annotations

from ..errors import ConfigError
from .folder import BUILD_INFO, CARD
from .verify import verify_folder


def upload_plan(path) -> tuple[list[str], str]:
    """Files to upload (card, build_info, every listed file) and the version tag, after verification."""
    folder = verify_folder(path)
    files = [CARD, BUILD_INFO] + sorted(rel for info in folder.build_info["configs"].values() for rel in info["files"])
    return files, f"v{folder.version}"


def push_folder(path, repo_id: str, *, private: bool = True, token: str | None = None, api=None) -> str:
    """Verify, upload the listed files to dataset repo ``repo_id``, tag ``v<version>``; return the commit URL.

    ImageNet-derived data must not be public: ``private`` defaults to True, and an existing public
    repository is refused (ConfigError) unless ``private=False`` says public is intended.
    """
    from huggingface_hub import HfApi

    files, tag = upload_plan(path)
    api = api or HfApi(token=token)
    if private and _is_public(api, repo_id):
        raise ConfigError(
            f"--repo-id {repo_id}: the dataset repository exists and is public; imagenet-suite pushes "
            "ImageNet-derived data to private repositories only. Make it private on the Hub, or pass "
            "--public if this data may be public"
        )
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(path),
        repo_id=repo_id,
        repo_type="dataset",
        allow_patterns=files,
        commit_message=f"imagenet-suite: {tag}",
    )
    api.create_tag(repo_id, tag=tag, repo_type="dataset", exist_ok=True)
    return str(getattr(commit, "commit_url", commit))


def _is_public(api, repo_id: str) -> bool:
    """Whether dataset repository ``repo_id`` exists and is public (False if it does not exist)."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        info = api.repo_info(repo_id, repo_type="dataset")
    except RepositoryNotFoundError:
        return False
    return info.private is False
