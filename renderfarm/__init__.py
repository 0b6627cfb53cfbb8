"""Shards scenario jobs over workers (local processes or Ray), with crash-safe resume.

Front door: :func:`run_job`; the scenario side of the seam is :mod:`scenarios.contract`.
"""

from sceneforge.scenarios.contract import JobPlan, Scenario, Shard, ShardResult, get_scenario
from sceneforge.renderfarm.job import JobOptions, run_job
from sceneforge.renderfarm.summary import exit_code, format_summary

__all__ = ["run_job", "JobOptions", "exit_code", "format_summary", "JobPlan", "Scenario", "Shard", "ShardResult", "get_scenario"]
