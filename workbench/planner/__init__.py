"""Capacity and cost planner: replay a week of traffic through an environment's scaling config."""
