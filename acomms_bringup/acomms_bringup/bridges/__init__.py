"""Bridges to existing vehicles and simulators (cola2, MBARI WEC); see registry.py."""
