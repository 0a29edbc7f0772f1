"""Resolving a recipe against a graph into a QuantPlan, and the plan passes (guards) that keep units float."""
