# sef .rpm %post ($1 = 1 install, 2 upgrade): secrets file, then enable and start (install) or restart (upgrade).
if [ ! -e /etc/sef/sef.env ]; then
  install -o root -g sef -m 0640 /usr/share/sef/sef.env /etc/sef/sef.env
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  if [ "$1" -eq 1 ]; then
    systemctl enable sef.service
    systemctl start sef.service || echo "sef: sef.service did not start: see journalctl -u sef" >&2
  else
    systemctl restart sef.service || echo "sef: sef.service did not restart: see journalctl -u sef" >&2
  fi
fi
exit 0
