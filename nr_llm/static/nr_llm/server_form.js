// The MCP server page shows the fields of the chosen authentication only. The page itself
// folds the fieldsets that do not serve the saved choice (fieldset class "collapse"); this
// hides them, and follows the select as the operator changes it before saving.
'use strict';
{
    const apply = (select) => {
        const chosen = select.value;
        for (const fieldset of document.querySelectorAll('fieldset[class*="nr-llm-for-"]')) {
            const serves = fieldset.classList.contains(`nr-llm-for-${chosen}`);
            fieldset.hidden = !serves;
            const details = fieldset.querySelector('details');
            if (serves && details) {
                details.open = true;
            }
        }
        // The header name belongs to a named header only.
        for (const row of document.querySelectorAll('.form-row.field-auth_header_name')) {
            row.hidden = chosen !== 'header';
        }
    };
    window.addEventListener('load', () => {
        const select = document.getElementById('id_auth_placement');
        if (select) {
            apply(select);
            select.addEventListener('change', () => apply(select));
        }
    });
}
